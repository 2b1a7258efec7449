-- A credential never obtains anything stronger than itself, and disconnecting a client ends what it obtained.
-- Every signed-in browser is a client (kind 'web') of its handle; a client remembers which client it was obtained
-- through (a web session signed in with a code another client read, a key made on /account, a settings link, an
-- OAuth grant or a join approved in a web session), so revoking one revokes its descendants.
ALTER TABLE clients ADD COLUMN parent_client_id TEXT;
CREATE INDEX clients_parent ON clients(parent_client_id) WHERE parent_client_id IS NOT NULL;
ALTER TABLE web_sessions ADD COLUMN client_id TEXT;
ALTER TABLE web_sessions ADD COLUMN scopes TEXT;
ALTER TABLE signin_codes ADD COLUMN read_by_client_id TEXT;
ALTER TABLE settings_links ADD COLUMN client_id TEXT;
ALTER TABLE settings_links ADD COLUMN scopes TEXT;
ALTER TABLE oauth_codes ADD COLUMN parent_client_id TEXT;
ALTER TABLE join_sessions ADD COLUMN parent_client_id TEXT;
-- Secrets of the server itself (the key that signs anonymous forms' CSRF tokens), made once at start.
CREATE TABLE server_secrets (
  name TEXT PRIMARY KEY,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL
);
