-- A refund is money that came back (a returned item, a deposit): stored like an expense, with a positive amount,
-- its payers the members who received it and its split whose money it was; it moves the balances the other way.
ALTER TABLE expenses ADD COLUMN kind TEXT NOT NULL DEFAULT 'expense' CHECK (kind IN ('expense', 'refund'));

-- get_spending's totals per group, day, category and member (agent_id '' for the expenses themselves), kept by the
-- triggers below from the live expenses and their shares, whoever writes them: summing 100,000 expenses' shares at
-- each read took seconds, these rows take milliseconds. A refund counts negative. Each amount is kept in two parts,
-- units of 10^9 (_hi) and the rest (_lo), so that no sum can overflow SQLite's 64-bit integers.
CREATE TABLE spending_totals (
  group_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  date TEXT NOT NULL,
  category TEXT NOT NULL,
  amount_hi INTEGER NOT NULL,
  amount_lo INTEGER NOT NULL,
  paid_hi INTEGER NOT NULL,
  paid_lo INTEGER NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (group_id, agent_id, date, category)
) WITHOUT ROWID;

CREATE TRIGGER spending_expense_insert AFTER INSERT ON expenses WHEN NEW.deleted = 0 BEGIN
  INSERT INTO spending_totals VALUES (NEW.group_id, '', NEW.date, coalesce(NEW.category, 'general'),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.amount_minor / 1000000000),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.amount_minor % 1000000000), 0, 0, 1)
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, count = count + excluded.count;
END;

-- A change of what counts (deleted, date, category, kind, amount): the old expense and its shares out, the new in.
-- Shares replaced in the same write come and go through their own triggers, counted with the expense as it is then.
CREATE TRIGGER spending_expense_update AFTER UPDATE OF deleted, date, category, kind, amount_minor, group_id ON expenses BEGIN
  INSERT INTO spending_totals SELECT OLD.group_id, '', OLD.date, coalesce(OLD.category, 'general'),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.amount_minor / 1000000000),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.amount_minor % 1000000000), 0, 0, -1
  WHERE OLD.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, count = count + excluded.count;
  INSERT INTO spending_totals SELECT OLD.group_id, s.agent_id, OLD.date, coalesce(OLD.category, 'general'),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.share_minor / 1000000000),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.share_minor % 1000000000),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.paid_minor / 1000000000),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.paid_minor % 1000000000), -1
  FROM expense_shares s WHERE s.expense_id = OLD.expense_id AND OLD.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, paid_hi = paid_hi + excluded.paid_hi, paid_lo = paid_lo + excluded.paid_lo,
    count = count + excluded.count;
  INSERT INTO spending_totals SELECT NEW.group_id, '', NEW.date, coalesce(NEW.category, 'general'),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.amount_minor / 1000000000),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.amount_minor % 1000000000), 0, 0, 1
  WHERE NEW.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, count = count + excluded.count;
  INSERT INTO spending_totals SELECT NEW.group_id, s.agent_id, NEW.date, coalesce(NEW.category, 'general'),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.share_minor / 1000000000),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.share_minor % 1000000000),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.paid_minor / 1000000000),
    (CASE NEW.kind WHEN 'refund' THEN -1 ELSE 1 END) * (s.paid_minor % 1000000000), 1
  FROM expense_shares s WHERE s.expense_id = NEW.expense_id AND NEW.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, paid_hi = paid_hi + excluded.paid_hi, paid_lo = paid_lo + excluded.paid_lo,
    count = count + excluded.count;
END;

CREATE TRIGGER spending_expense_delete AFTER DELETE ON expenses WHEN OLD.deleted = 0 BEGIN
  INSERT INTO spending_totals VALUES (OLD.group_id, '', OLD.date, coalesce(OLD.category, 'general'),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.amount_minor / 1000000000),
    -(CASE OLD.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.amount_minor % 1000000000), 0, 0, -1)
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, count = count + excluded.count;
END;

CREATE TRIGGER spending_share_insert AFTER INSERT ON expense_shares BEGIN
  INSERT INTO spending_totals SELECT e.group_id, NEW.agent_id, e.date, coalesce(e.category, 'general'),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.share_minor / 1000000000),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.share_minor % 1000000000),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.paid_minor / 1000000000),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.paid_minor % 1000000000), 1
  FROM expenses e WHERE e.expense_id = NEW.expense_id AND e.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, paid_hi = paid_hi + excluded.paid_hi, paid_lo = paid_lo + excluded.paid_lo,
    count = count + excluded.count;
END;

CREATE TRIGGER spending_share_delete AFTER DELETE ON expense_shares BEGIN
  INSERT INTO spending_totals SELECT e.group_id, OLD.agent_id, e.date, coalesce(e.category, 'general'),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.share_minor / 1000000000),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.share_minor % 1000000000),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.paid_minor / 1000000000),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.paid_minor % 1000000000), -1
  FROM expenses e WHERE e.expense_id = OLD.expense_id AND e.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, paid_hi = paid_hi + excluded.paid_hi, paid_lo = paid_lo + excluded.paid_lo,
    count = count + excluded.count;
END;

CREATE TRIGGER spending_share_update AFTER UPDATE ON expense_shares BEGIN
  INSERT INTO spending_totals SELECT e.group_id, OLD.agent_id, e.date, coalesce(e.category, 'general'),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.share_minor / 1000000000),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.share_minor % 1000000000),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.paid_minor / 1000000000),
    -(CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (OLD.paid_minor % 1000000000), -1
  FROM expenses e WHERE e.expense_id = OLD.expense_id AND e.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, paid_hi = paid_hi + excluded.paid_hi, paid_lo = paid_lo + excluded.paid_lo,
    count = count + excluded.count;
  INSERT INTO spending_totals SELECT e.group_id, NEW.agent_id, e.date, coalesce(e.category, 'general'),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.share_minor / 1000000000),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.share_minor % 1000000000),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.paid_minor / 1000000000),
    (CASE e.kind WHEN 'refund' THEN -1 ELSE 1 END) * (NEW.paid_minor % 1000000000), 1
  FROM expenses e WHERE e.expense_id = NEW.expense_id AND e.deleted = 0
  ON CONFLICT (group_id, agent_id, date, category) DO UPDATE SET amount_hi = amount_hi + excluded.amount_hi,
    amount_lo = amount_lo + excluded.amount_lo, paid_hi = paid_hi + excluded.paid_hi, paid_lo = paid_lo + excluded.paid_lo,
    count = count + excluded.count;
END;

-- The totals of the expenses already written (none is a refund yet).
INSERT INTO spending_totals
  SELECT group_id, '', date, coalesce(category, 'general'), SUM(amount_minor / 1000000000), SUM(amount_minor % 1000000000), 0, 0, COUNT(*)
  FROM expenses WHERE deleted = 0 GROUP BY group_id, date, coalesce(category, 'general');
INSERT INTO spending_totals
  SELECT e.group_id, s.agent_id, e.date, coalesce(e.category, 'general'), SUM(s.share_minor / 1000000000), SUM(s.share_minor % 1000000000),
    SUM(s.paid_minor / 1000000000), SUM(s.paid_minor % 1000000000), COUNT(*)
  FROM expenses e JOIN expense_shares s ON s.expense_id = e.expense_id WHERE e.deleted = 0
  GROUP BY e.group_id, s.agent_id, e.date, coalesce(e.category, 'general');

-- One payment to a friend across the groups they share (record_payment without group_id) is a part per group, all
-- with the same batch_id: recorded in one transaction, confirmed, rejected or voided together.
ALTER TABLE payments ADD COLUMN batch_id TEXT;
CREATE INDEX payments_batch ON payments(batch_id) WHERE batch_id IS NOT NULL;
