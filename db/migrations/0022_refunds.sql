-- A refund is money that came back (a returned item, a deposit): stored like an expense, with a positive amount,
-- its payers the members who received it and its split whose money it was; it moves the balances the other way.
ALTER TABLE expenses ADD COLUMN kind TEXT NOT NULL DEFAULT 'expense' CHECK (kind IN ('expense', 'refund'));
