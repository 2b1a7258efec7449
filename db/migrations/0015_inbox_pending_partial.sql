-- One index fewer for every delivery. inbox_pending_action, kept whole only for 0.9 instances serving beside this
-- release during a rolling upgrade (0012), becomes a partial index of the items that wait for a decision, ordered
-- so that it also gives the summary's newest unread asks; inbox_unread_asks, which did that, goes.
-- 0.9's count names requires_action = 1 AND resolved = 0 AND dismissed = 0 literally, so SQLite still accepts the
-- partial index it asks for with INDEXED BY (test/ops/release-fixtures.test.ts runs that query).
DROP INDEX inbox_pending_action;
DROP INDEX inbox_unread_asks;
CREATE INDEX inbox_pending_action ON inbox_items(agent_id, seen, seq, expires_at) WHERE requires_action = 1 AND resolved = 0 AND dismissed = 0;
