-- Placeholder members: a friend without an account, added to a group by name. The placeholder's member_id stands
-- where an agent id stands in the ledger (group_members, expense_shares, ledger_pairs, payments) until someone
-- claims it with its one-time code; the claim moves all of it to the claiming agent in one transaction.
CREATE TABLE group_placeholders (
  member_id TEXT PRIMARY KEY,
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  name TEXT NOT NULL,
  created_by TEXT NOT NULL REFERENCES agents(agent_id),
  created_at TEXT NOT NULL,
  -- sha256 of the one-time claim code; null once claimed
  claim_hash TEXT UNIQUE,
  claimed_by TEXT REFERENCES agents(agent_id),
  claimed_at TEXT
);
CREATE INDEX group_placeholders_group ON group_placeholders(group_id);
