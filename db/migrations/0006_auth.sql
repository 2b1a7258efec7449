-- Humans on the web and OAuth 2.1: join sessions, sign-in codes, browser sessions, settings links,
-- the authorization server's registered clients, codes, refresh tokens and signing keys, and OIDC identities.
-- Every secret (poll token, user code, sign-in code, cookie, link, authorization code, refresh token) is kept only as its SHA-256.

-- A second agent asking to join a handle; the human finishes it on the join page. Expiry is read from expires_at.
CREATE TABLE join_sessions (
  session_id TEXT PRIMARY KEY,
  poll_token_hash TEXT NOT NULL UNIQUE,
  user_code_hash TEXT NOT NULL UNIQUE,
  client_name TEXT NOT NULL,
  suggested_handle TEXT,
  display_name TEXT,
  invite_code TEXT,
  status TEXT NOT NULL,
  agent_id TEXT REFERENCES agents(agent_id),
  created INTEGER,
  client_id TEXT REFERENCES clients(client_id),
  joined_group_id TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  finished_at TEXT,
  key_issued_at TEXT
);

-- Browser sessions of the pages, anonymous until the human signs in; the cookie holds the secret.
CREATE TABLE web_sessions (
  session_hash TEXT PRIMARY KEY,
  csrf_token TEXT NOT NULL,
  agent_id TEXT REFERENCES agents(agent_id),
  access TEXT,
  join_session_id TEXT REFERENCES join_sessions(session_id),
  oauth_request TEXT,
  oidc_flow TEXT,
  oidc_identity TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX web_sessions_expiry ON web_sessions(expires_at);

-- One-time codes left in a handle's inbox to prove that the human at a browser holds that handle.
CREATE TABLE signin_codes (
  code_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  web_session_hash TEXT NOT NULL,
  code_hash TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
CREATE INDEX signin_codes_agent ON signin_codes(agent_id, created_at);
CREATE INDEX signin_codes_session ON signin_codes(web_session_hash);

CREATE TABLE settings_links (
  token_hash TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);

-- Applications registered with the authorization server (RFC 7591); public clients only.
CREATE TABLE oauth_clients (
  client_id TEXT PRIMARY KEY,
  client_name TEXT,
  redirect_uris TEXT NOT NULL,
  grant_types TEXT NOT NULL,
  scope TEXT,
  created_at TEXT NOT NULL
);

CREATE TABLE oauth_codes (
  code_hash TEXT PRIMARY KEY,
  oauth_client_id TEXT NOT NULL REFERENCES oauth_clients(client_id),
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  redirect_uri TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  scope TEXT NOT NULL,
  resource TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT,
  -- the session the code produced, so that a replayed code can end it
  client_id TEXT REFERENCES clients(client_id)
);

-- One family of refresh tokens per OAuth session (a clients row of kind oauth); reuse of a rotated token ends the session.
CREATE TABLE oauth_refresh_tokens (
  token_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES clients(client_id),
  oauth_client_id TEXT NOT NULL REFERENCES oauth_clients(client_id),
  scope TEXT NOT NULL,
  resource TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT,
  revoked_at TEXT
);
CREATE INDEX oauth_refresh_tokens_client ON oauth_refresh_tokens(client_id);

-- Keys that sign access tokens; a key signs only for the issuer (the server's base URL) it was made for.
CREATE TABLE oauth_signing_keys (
  kid TEXT PRIMARY KEY,
  issuer TEXT NOT NULL,
  private_jwk TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  created_at TEXT NOT NULL,
  retired_at TEXT
);

-- Logins at the configured OpenID Connect provider linked to a handle.
CREATE TABLE oidc_identities (
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  email TEXT,
  email_verified INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  PRIMARY KEY (issuer, subject)
);
CREATE INDEX oidc_identities_agent ON oidc_identities(agent_id);
