-- What each pair of members of a group owes the other, in minor units: an integer cache of the ledger,
-- changed in the same transaction as every expense and payment that moves money, so balances and
-- settle-up read at most n(n-1)/2 rows instead of every share of every expense. A group without a
-- ledger_pairs_built row is rebuilt from the ledger on its next read (groups older than this table,
-- or a repair: delete the row).
CREATE TABLE ledger_pairs (
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  -- the pair's two agent ids in code-unit order
  low_id TEXT NOT NULL REFERENCES agents(agent_id),
  high_id TEXT NOT NULL REFERENCES agents(agent_id),
  -- what low owes high; negative when high owes low
  low_owes_minor INTEGER NOT NULL,
  PRIMARY KEY (group_id, low_id, high_id)
);
CREATE TABLE ledger_pairs_built (
  group_id TEXT PRIMARY KEY REFERENCES groups(group_id),
  built_at TEXT NOT NULL
);
