-- E-mail for people (docs/operations.md "Mail"): the address a person confirmed by a link, the notifications waiting
-- to be sent to it, and the outbox the job runner sends over SMTP. An agent's own inbox is unchanged: these are
-- derived from the items it gets, for the person behind the handle.

-- One address per handle. `address` is the confirmed one (NULL until a first is confirmed); a new address waits in
-- pending_* until its link is opened, the old one working meanwhile. set_through_client_id: the client the browser
-- that confirmed it was signed in through (a factor tied to it ends with it, as a phone does). prefs: for each kind
-- of notification, "immediate", "daily" or "off" (JSON).
CREATE TABLE email_addresses (
  agent_id TEXT PRIMARY KEY REFERENCES agents(agent_id),
  address TEXT,
  address_key TEXT,
  confirmed_at TEXT,
  set_through_client_id TEXT,
  pending_address TEXT,
  pending_hash TEXT,
  pending_expires_at TEXT,
  pending_set_through TEXT,
  prefs TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX email_addresses_key ON email_addresses(address_key) WHERE address_key IS NOT NULL;
CREATE INDEX email_addresses_pending ON email_addresses(pending_hash) WHERE pending_hash IS NOT NULL;
CREATE INDEX email_addresses_set_through ON email_addresses(set_through_client_id) WHERE set_through_client_id IS NOT NULL;

-- An inbox item a person is to hear of by e-mail, written with the item (server/domain/inbox.ts deliverAll), in its
-- transaction; composed into one e-mail per person (immediate ones a few minutes later, daily ones once a day).
CREATE TABLE email_events (
  event_id INTEGER PRIMARY KEY AUTOINCREMENT,
  agent_id TEXT NOT NULL,
  item_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  daily INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX email_events_due ON email_events(daily, agent_id, created_at);
CREATE INDEX email_events_agent ON email_events(agent_id, kind);

-- Every e-mail, sent or waiting: sent by the job runner with retries; kept a week after, which is also the record
-- the sending limits count (per address: to_key, sent_at; per server: sent_at).
CREATE TABLE email_outbox (
  mail_id TEXT PRIMARY KEY,
  agent_id TEXT,
  to_address TEXT NOT NULL,
  to_key TEXT NOT NULL,
  purpose TEXT NOT NULL,
  subject TEXT NOT NULL,
  text_body TEXT NOT NULL,
  html_body TEXT NOT NULL,
  unsubscribe_url TEXT,
  created_at TEXT NOT NULL,
  next_attempt_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  sent_at TEXT,
  failed_at TEXT
);
CREATE INDEX email_outbox_due ON email_outbox(next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;
CREATE INDEX email_outbox_to ON email_outbox(to_key, sent_at);
CREATE INDEX email_outbox_sent ON email_outbox(sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX email_outbox_created ON email_outbox(created_at);

-- A link sent by e-mail signs in like the operator's reset link: `purpose` says where it lands (reset: the account
-- page to set a password; signin: the page asked for), set_through_client_id what the address was tied to (the
-- browser it signs in is obtained through that client and ends with it).
ALTER TABLE reset_links ADD COLUMN purpose TEXT NOT NULL DEFAULT 'reset';
ALTER TABLE reset_links ADD COLUMN set_through_client_id TEXT;
CREATE INDEX reset_links_set_through ON reset_links(set_through_client_id) WHERE set_through_client_id IS NOT NULL;
