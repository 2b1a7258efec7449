-- A group's ledger as one ordered chain of events (docs/federation.md, "The ledger across servers"): the group's home
-- server numbers every ledger change of the group, and each event's hash covers the one before it, so a history
-- rewritten anywhere shows. `body` is the canonical JSON the hash is taken of, kept byte for byte. The key makes two
-- changes of one group at the same moment conflict (one runs again) instead of forking the chain.
CREATE TABLE group_events (
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  hash TEXT NOT NULL,
  PRIMARY KEY (group_id, seq)
) WITHOUT ROWID;
-- Events of a group no other server follows are numbered as their batches commit and hashed later (hash ''): the job
-- that seals them finds them here.
CREATE INDEX group_events_unsealed ON group_events (group_id) WHERE hash = '';
-- A group whose home is another server: this server holds a read copy, fed by the home's events in order.
-- Written when a local agent accepts an invitation to it, before the group's first event arrives (so no reference
-- to groups).
CREATE TABLE group_homes (
  group_id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  -- the local agent who joined first: this server's requests to the home speak for it
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  -- when the home last sent an event this copy took (AsOf: home.synced_at)
  synced_at TEXT NOT NULL,
  -- since when a write found the home not answering (cleared by its next answer): reads say they may be stale
  unreachable_since TEXT,
  -- the last range asked of the home after a gap (events after this seq), and when: asked once until answered
  asked_after INTEGER,
  asked_at TEXT
);
-- In a copy, the home server's agent ids (which its events name) as this server's agents.
CREATE TABLE group_home_agents (
  group_id TEXT NOT NULL,
  home_agent_id TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  PRIMARY KEY (group_id, home_agent_id)
) WITHOUT ROWID;
