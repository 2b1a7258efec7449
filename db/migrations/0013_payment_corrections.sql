-- Payments that can be corrected, in other currencies (issue 13).
-- A payment given in another currency keeps what was given; amount_minor stays in the group's currency,
-- converted once at exchange_rate (units of the group's currency per unit of original_currency).
ALTER TABLE payments ADD COLUMN original_currency TEXT;
ALTER TABLE payments ADD COLUMN original_amount_minor INTEGER;
ALTER TABLE payments ADD COLUMN exchange_rate TEXT;
-- respond_payment action void: state becomes 'voided' (it no longer counts); who voided it and when.
ALTER TABLE payments ADD COLUMN voided_by TEXT REFERENCES agents(agent_id);
ALTER TABLE payments ADD COLUMN voided_at TEXT;
