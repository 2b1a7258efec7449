-- One writer for a database shared by several instances (remote or replica mode, svc serve --peer-secret): the
-- instance holding this one row's lease runs every write tool call, the others send theirs to it at url.
CREATE TABLE writer_lease (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  holder TEXT NOT NULL,
  url TEXT NOT NULL,
  lease_until TEXT NOT NULL
);
