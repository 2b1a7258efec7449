-- Accounts for people: a password (argon2id) and passkeys (WebAuthn) per handle, one-time reset links an operator
-- prints (svc users reset-link), and the WebAuthn challenge a browser is answering, kept in its web session.
CREATE TABLE passwords (
  agent_id TEXT PRIMARY KEY,
  hash TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE passkeys (
  credential_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  public_key TEXT NOT NULL,
  counter INTEGER NOT NULL,
  transports TEXT,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_used_at TEXT
);
CREATE INDEX passkeys_agent ON passkeys(agent_id);
CREATE TABLE reset_links (
  token_hash TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
ALTER TABLE web_sessions ADD COLUMN webauthn_challenge TEXT;
