-- svc users disable: every credential of a disabled agent is refused; its data stays as it was.
ALTER TABLE agents ADD COLUMN disabled_at TEXT;
-- The phone number (E.164) the human proved on the settings page; phone_verified (0001) says one is proved.
ALTER TABLE agents ADD COLUMN phone TEXT;
-- How a sign-in code went out: to the handle's inbox, or by SMS to its verified phone.
ALTER TABLE signin_codes ADD COLUMN channel TEXT NOT NULL DEFAULT 'inbox';
-- A code sent by SMS to a number being added on the settings page; kept apart from signin_codes so that typing it
-- back can only verify the number, never sign a browser in.
CREATE TABLE phone_codes (
  code_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  web_session_hash TEXT NOT NULL,
  phone TEXT NOT NULL,
  code_hash TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
CREATE INDEX phone_codes_agent ON phone_codes(agent_id, created_at);
CREATE INDEX phone_codes_session ON phone_codes(web_session_hash);
