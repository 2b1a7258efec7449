-- A recurring expense's last date (inclusive): no occurrence after it; null repeats with no end.
ALTER TABLE expenses ADD COLUMN repeat_until TEXT;
-- Where an expense's exchange_rate came from: null when the caller gave it, else the rates file and its date.
ALTER TABLE expenses ADD COLUMN rate_source TEXT;
-- Reference rates fetched from --rates-url: units of `currency` per one euro on `date`, as a decimal string.
CREATE TABLE exchange_rates (
  date TEXT NOT NULL,
  currency TEXT NOT NULL,
  per_eur TEXT NOT NULL,
  source TEXT NOT NULL,
  fetched_at TEXT NOT NULL,
  PRIMARY KEY (currency, date)
);
-- Receipts: an expense's files, kept in the database so that a backup keeps them.
CREATE TABLE expense_attachments (
  attachment_id TEXT PRIMARY KEY,
  expense_id TEXT NOT NULL REFERENCES expenses(expense_id),
  group_id TEXT NOT NULL,
  filename TEXT NOT NULL,
  media_type TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  content BLOB NOT NULL,
  uploaded_by TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX expense_attachments_expense ON expense_attachments(expense_id, created_at);
CREATE INDEX expense_attachments_group ON expense_attachments(group_id, size_bytes);
