-- A handle made twice: the human joins it into their other handle. The retired row keeps its history
-- (expenses, messages name it) but it can no longer sign in, be found, or be registered again.
ALTER TABLE agents ADD COLUMN retired_at TEXT;
ALTER TABLE agents ADD COLUMN merged_into TEXT REFERENCES agents(agent_id);

-- The provider login a browser session proved (issuer, subject, e-mail, verified), kept while it stays signed in:
-- joining two handles needs the human to have just shown the provider that they hold the shared e-mail.
ALTER TABLE web_sessions ADD COLUMN provider_login TEXT;

-- Clients known by their client ID metadata document (client_id is the document's https URL):
-- when the stored copy is stale and the document must be fetched again. Null for registered clients.
ALTER TABLE oauth_clients ADD COLUMN metadata_expires_at TEXT;
