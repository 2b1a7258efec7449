-- export_group reads a group's ledger in batches, each after the last row of the one before: expenses in (date,
-- rowid) order, payments in rowid order. These indexes hold exactly that order (an index ends with the rowid), so
-- each batch starts where the last one stopped; without them every batch sorted the whole group again.
CREATE INDEX expenses_group_export ON expenses(group_id, date);
CREATE INDEX payments_group_export ON payments(group_id);
