-- A write call reads first and sends its writes as one batch; what it read and must still hold is checked inside the
-- batch by guards (db/query.ts guard). A guard whose condition no longer holds inserts a row here, which the CHECK
-- refuses: the batch fails whole, as a write conflict, and the call runs again from its reads. No row is ever kept.
CREATE TABLE write_conflicts (
  guard TEXT,
  CONSTRAINT write_conflict CHECK (guard IS NULL)
);
