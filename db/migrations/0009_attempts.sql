-- Attempts at guessing secrets (contact codes), counted in the database so the limit holds across instances.
CREATE TABLE attempt_counters (
  key TEXT PRIMARY KEY,
  window_start TEXT NOT NULL,
  count INTEGER NOT NULL
);
