-- Background work shared by every instance on one database.
-- One row per job: an instance runs a job only after moving lease_until past now with a conditional UPDATE,
-- so two instances never run the same job at once; next_run_at spaces the runs.
CREATE TABLE job_leases (
  name TEXT PRIMARY KEY,
  holder TEXT,
  lease_until TEXT NOT NULL,
  next_run_at TEXT NOT NULL,
  last_run_at TEXT,
  last_count INTEGER
);

-- Each running server refreshes its row; restore refuses to replace a database that looks in use.
CREATE TABLE instances (
  instance_id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  started_at TEXT NOT NULL,
  seen_at TEXT NOT NULL
);
