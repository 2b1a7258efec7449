-- Identity, credentials, contacts, inbox, idempotency and platform invites.
CREATE TABLE agents (
  agent_id TEXT PRIMARY KEY,
  handle TEXT NOT NULL UNIQUE,
  display_name TEXT NOT NULL,
  description TEXT,
  contact_code TEXT UNIQUE,
  email TEXT,
  email_verified INTEGER NOT NULL DEFAULT 0,
  phone_verified INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);

CREATE TABLE clients (
  client_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at TEXT
);
CREATE INDEX clients_agent ON clients(agent_id);

-- Only the SHA-256 of a key is stored; expires_at is set on the old key when it is rotated.
CREATE TABLE api_keys (
  key_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES clients(client_id),
  scopes TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  revoked_at TEXT
);
CREATE INDEX api_keys_client ON api_keys(client_id);

-- One row per side of a relation: owner sees other in `state`.
CREATE TABLE contacts (
  owner_id TEXT NOT NULL REFERENCES agents(agent_id),
  other_id TEXT NOT NULL REFERENCES agents(agent_id),
  state TEXT NOT NULL,
  source TEXT NOT NULL,
  note TEXT,
  requested_at TEXT NOT NULL,
  responded_at TEXT,
  PRIMARY KEY (owner_id, other_id)
);
CREATE INDEX contacts_owner_state ON contacts(owner_id, state);

CREATE TABLE contact_declines (
  requester_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  declined_at TEXT NOT NULL,
  PRIMARY KEY (requester_id, target_id)
);

CREATE TABLE inbox_items (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  item_id TEXT NOT NULL UNIQUE,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  type TEXT NOT NULL,
  app TEXT NOT NULL,
  from_agent_id TEXT,
  summary_md TEXT NOT NULL,
  payload TEXT NOT NULL,
  note TEXT,
  refs TEXT NOT NULL,
  requires_action INTEGER NOT NULL,
  suggested_tools TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  seen INTEGER NOT NULL DEFAULT 0,
  resolved INTEGER NOT NULL DEFAULT 0,
  dismissed INTEGER NOT NULL DEFAULT 0,
  kept INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX inbox_agent_seq ON inbox_items(agent_id, dismissed, seq);

CREATE TABLE inbox_cursors (
  client_id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL
);

CREATE TABLE idempotency_records (
  agent_id TEXT NOT NULL,
  key TEXT NOT NULL,
  tool TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  response TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, key)
);

CREATE TABLE platform_invites (
  code TEXT PRIMARY KEY,
  max_uses INTEGER NOT NULL,
  uses INTEGER NOT NULL DEFAULT 0,
  note TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  revoked_at TEXT
);
