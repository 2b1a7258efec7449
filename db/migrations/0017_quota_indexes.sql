-- Per-agent quotas (server/domain/quotas.ts) sum or count one agent's rows of the last 24 hours on each write:
-- these make that a range of at most a day's rows, however much the agent wrote before.
CREATE INDEX envelopes_sender_created ON envelopes(sender_id, created_at);
CREATE INDEX expenses_creator_group ON expenses(created_by, group_id, created_at);
