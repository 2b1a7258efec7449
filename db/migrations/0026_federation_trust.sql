-- Federation trust (docs/security.md, "Federation trust").
-- Each outbox event's sender, so that the number of other servers an agent has undelivered events for can be counted
-- (the pending_hosts quota); and whether the event was not delivered (refused by the other server, or given up).
ALTER TABLE federation_outbox ADD COLUMN sender_id TEXT;
ALTER TABLE federation_outbox ADD COLUMN undelivered INTEGER NOT NULL DEFAULT 0;
UPDATE federation_outbox SET sender_id = json_extract(event, '$.from');
CREATE INDEX federation_outbox_pending_senders ON federation_outbox(sender_id, destination) WHERE sent_at IS NULL;
-- When a transaction signed with one of these keys last verified: keys fetched for a host that never proved itself
-- are deleted by a job.
ALTER TABLE federation_peer_keys ADD COLUMN verified_at TEXT;
-- Envelope bytes received from each agent of another server (by address), taken or dropped alike: the operator's
-- envelope_bytes_per_day holds for them, and a refusal says nothing of who blocked or declined the sender.
CREATE TABLE federation_envelope_bytes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  address TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  received_at TEXT NOT NULL
);
CREATE INDEX federation_envelope_bytes_by_address ON federation_envelope_bytes(address, received_at);
CREATE INDEX federation_envelope_bytes_by_time ON federation_envelope_bytes(received_at);
