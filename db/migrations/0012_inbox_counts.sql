-- The inbox summary rides on every authenticated answer, so its counts are kept, not counted: triggers keep
-- per-agent counters in the same transaction as every delivery, mark, resolution and deletion.
-- An item is unread while unseen and not dismissed; it waits for a decision while it requires action, is
-- unresolved and not dismissed. Expiry is applied when reading: items
-- past expires_at are subtracted (an index range, normally empty) until the expiry job deletes them.
CREATE TABLE inbox_counts (
  agent_id TEXT PRIMARY KEY,
  unread INTEGER NOT NULL DEFAULT 0,
  requires_action INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO inbox_counts (agent_id, unread, requires_action)
SELECT agent_id,
       sum(seen = 0 AND dismissed = 0),
       sum(requires_action = 1 AND resolved = 0 AND dismissed = 0)
  FROM inbox_items GROUP BY agent_id;

CREATE TRIGGER inbox_counts_insert AFTER INSERT ON inbox_items BEGIN
  INSERT INTO inbox_counts (agent_id, unread, requires_action)
  VALUES (NEW.agent_id,
          NEW.seen = 0 AND NEW.dismissed = 0,
          NEW.requires_action = 1 AND NEW.resolved = 0 AND NEW.dismissed = 0)
  ON CONFLICT (agent_id) DO UPDATE SET unread = unread + excluded.unread, requires_action = requires_action + excluded.requires_action;
END;

CREATE TRIGGER inbox_counts_update AFTER UPDATE OF agent_id, seen, resolved, dismissed, requires_action ON inbox_items BEGIN
  UPDATE inbox_counts
     SET unread = unread - (OLD.seen = 0 AND OLD.dismissed = 0),
         requires_action = requires_action - (OLD.requires_action = 1 AND OLD.resolved = 0 AND OLD.dismissed = 0)
   WHERE agent_id = OLD.agent_id;
  INSERT INTO inbox_counts (agent_id, unread, requires_action)
  VALUES (NEW.agent_id,
          NEW.seen = 0 AND NEW.dismissed = 0,
          NEW.requires_action = 1 AND NEW.resolved = 0 AND NEW.dismissed = 0)
  ON CONFLICT (agent_id) DO UPDATE SET unread = unread + excluded.unread, requires_action = requires_action + excluded.requires_action;
END;

CREATE TRIGGER inbox_counts_delete AFTER DELETE ON inbox_items BEGIN
  UPDATE inbox_counts
     SET unread = unread - (OLD.seen = 0 AND OLD.dismissed = 0),
         requires_action = requires_action - (OLD.requires_action = 1 AND OLD.resolved = 0 AND OLD.dismissed = 0)
   WHERE agent_id = OLD.agent_id;
END;

-- The summary's top lines: the newest unread asks, then the newest other unread items, each an index range read
-- with a LIMIT (partial indexes: only such items are in them). inbox_unseen and inbox_pending_action, which the
-- counts of 0.9 read, are no longer read; they stay until a later release, because 0.9 instances name them
-- (INDEXED BY) and keep serving beside new ones during a rolling upgrade (docs/operations.md).
CREATE INDEX inbox_unread_asks ON inbox_items(agent_id, seq) WHERE seen = 0 AND dismissed = 0 AND requires_action = 1 AND resolved = 0;
CREATE INDEX inbox_unread_news ON inbox_items(agent_id, seq) WHERE seen = 0 AND dismissed = 0 AND requires_action = 0;
-- Items past expires_at, per agent: those not yet deleted are subtracted from the counters, and the expiry job
-- finds what to delete agent by agent (from inbox_counts), so no index of all items by expiry is kept.
CREATE INDEX inbox_agent_expiry ON inbox_items(agent_id, expires_at);
