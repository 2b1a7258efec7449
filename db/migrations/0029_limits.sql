-- Guess limits as sliding windows (docs/security.md, "Limits"): a key's latest attempt times (epoch milliseconds, a
-- JSON list of at most its limit), not a count per fixed clock window, which let twice the limit through across a
-- window's edge. The fixed-window counts are not carried over: at most one window of guesses is forgotten once.
DROP TABLE attempt_counters;
CREATE TABLE attempt_times (
  key TEXT PRIMARY KEY,
  times TEXT NOT NULL,
  -- when the newest attempt leaves its window: the row counts for nothing after it and is deleted
  expires_at TEXT NOT NULL
);
CREATE INDEX attempt_times_expires ON attempt_times(expires_at);
-- The attachment bytes an agent uploaded and that are still stored (--quota attachment_bytes), read from the index.
CREATE INDEX expense_attachments_uploader ON expense_attachments(uploaded_by, size_bytes);
-- A claim link works until then; the links made before it work for 30 days from the upgrade.
ALTER TABLE group_placeholders ADD COLUMN claim_expires_at TEXT;
UPDATE group_placeholders SET claim_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+30 days') WHERE claim_hash IS NOT NULL;
