-- What svc serve was started with that admin commands need to agree with it (its public base URL): recorded at every
-- start, so `svc users reset-link` run from an admin shell writes links for the server's real address.
CREATE TABLE server_settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
