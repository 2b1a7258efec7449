-- The inbox summary rides on every authenticated answer: its counts must come from index ranges,
-- not a scan of an agent's whole inbox.
CREATE INDEX inbox_unseen ON inbox_items(agent_id, seen, dismissed, seq, expires_at);
CREATE INDEX inbox_pending_action ON inbox_items(agent_id, requires_action, resolved, dismissed, expires_at);
