-- Federation (docs/federation.md): this server's signing keys, agents of other servers, the outbox, what came in.
-- This server's Ed25519 keys; the newest one signs, the others stay published until expires_at.
CREATE TABLE federation_keys (
  kid TEXT PRIMARY KEY,
  private_jwk TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  created_at TEXT NOT NULL,
  not_before TEXT NOT NULL,
  expires_at TEXT
);
-- An agent of another server: a local agents row (its handle an alias such as bob-bexample) and its address.
CREATE TABLE remote_agents (
  agent_id TEXT PRIMARY KEY REFERENCES agents(agent_id),
  address TEXT NOT NULL UNIQUE,
  host TEXT NOT NULL,
  handle TEXT NOT NULL,
  created_at TEXT NOT NULL
);
-- What a local agent accepts from other servers: contact requests with a code (default), by address too, or nothing.
CREATE TABLE federation_settings (
  agent_id TEXT PRIMARY KEY REFERENCES agents(agent_id),
  accept TEXT NOT NULL DEFAULT 'code'
);
-- A contact request sent to another server by code: the answer names the agent that accepted it.
CREATE TABLE federation_requests (
  event_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  host TEXT NOT NULL,
  created_at TEXT NOT NULL
);
-- Events for other servers, written in the transaction of the tool call that made them; sent in seq order.
CREATE TABLE federation_outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  destination TEXT NOT NULL,
  event_id TEXT NOT NULL UNIQUE,
  event TEXT NOT NULL,
  created_at TEXT NOT NULL,
  txn_id TEXT,
  sent_at TEXT
);
CREATE INDEX federation_outbox_pending ON federation_outbox(destination, seq) WHERE sent_at IS NULL;
-- One destination's transaction in flight: retried with the same txn_id and body until answered.
CREATE TABLE federation_txns_out (
  destination TEXT PRIMARY KEY,
  txn_id TEXT NOT NULL,
  body TEXT NOT NULL,
  last_seq INTEGER NOT NULL,
  first_tried_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_try_at TEXT NOT NULL
);
-- The answer given to each transaction received, per (origin, txn_id): a replay gets it again.
CREATE TABLE federation_txns_in (
  origin TEXT NOT NULL,
  txn_id TEXT NOT NULL,
  body_digest TEXT NOT NULL,
  answer TEXT NOT NULL,
  received_at TEXT NOT NULL,
  PRIMARY KEY (origin, txn_id)
);
-- Event ids received, kept 30 days: a duplicate is dropped.
CREATE TABLE federation_events_seen (
  origin TEXT NOT NULL,
  event_id TEXT NOT NULL,
  received_at TEXT NOT NULL,
  PRIMARY KEY (origin, event_id)
);
-- Other servers' published keys, as last fetched; refetched_at: the last fetch an unknown kid caused.
CREATE TABLE federation_peer_keys (
  host TEXT PRIMARY KEY,
  jwks TEXT NOT NULL,
  fetched_at TEXT NOT NULL,
  refetched_at TEXT
);
-- Hosts this server refuses whatever the mode; and hosts first seen in open mode (greylisted until first_seen_at ages).
CREATE TABLE federation_hosts (
  host TEXT PRIMARY KEY,
  blocked INTEGER NOT NULL DEFAULT 0,
  first_seen_at TEXT NOT NULL
);
-- Counters per origin host and window, so that every process of the server applies the same limits.
CREATE TABLE federation_limits (
  host TEXT NOT NULL,
  kind TEXT NOT NULL,
  window_start TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (host, kind, window_start)
);
