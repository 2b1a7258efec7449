-- Each agent's open total per currency: the sizes of all its pair debts, over all its groups in that currency.
-- The bound on the ledger's totals (server/domain/ledger/limits.ts) reads one row per agent a change involves,
-- instead of every pair of every group they are in. Kept by triggers in the same transaction as every change to
-- the pair ledger, whoever makes it (an expense, a payment, a rebuild).
CREATE TABLE ledger_totals (
  agent_id TEXT NOT NULL,
  currency TEXT NOT NULL,
  open_minor INTEGER NOT NULL,
  PRIMARY KEY (agent_id, currency)
) WITHOUT ROWID;

INSERT INTO ledger_totals (agent_id, currency, open_minor)
SELECT agent, currency, sum(size) FROM (
  SELECT p.low_id AS agent, g.currency AS currency, abs(p.low_owes_minor) AS size FROM ledger_pairs p JOIN groups g ON g.group_id = p.group_id
  UNION ALL
  SELECT p.high_id, g.currency, abs(p.low_owes_minor) FROM ledger_pairs p JOIN groups g ON g.group_id = p.group_id
) GROUP BY agent, currency;

CREATE TRIGGER ledger_totals_insert AFTER INSERT ON ledger_pairs BEGIN
  INSERT INTO ledger_totals (agent_id, currency, open_minor)
  SELECT a, (SELECT currency FROM groups WHERE group_id = NEW.group_id), abs(NEW.low_owes_minor)
    FROM (SELECT NEW.low_id AS a UNION ALL SELECT NEW.high_id) WHERE true
  ON CONFLICT (agent_id, currency) DO UPDATE SET open_minor = open_minor + excluded.open_minor;
END;

CREATE TRIGGER ledger_totals_update AFTER UPDATE OF low_owes_minor ON ledger_pairs BEGIN
  UPDATE ledger_totals SET open_minor = open_minor + abs(NEW.low_owes_minor) - abs(OLD.low_owes_minor)
   WHERE agent_id IN (NEW.low_id, NEW.high_id) AND currency = (SELECT currency FROM groups WHERE group_id = NEW.group_id);
END;

CREATE TRIGGER ledger_totals_delete AFTER DELETE ON ledger_pairs BEGIN
  UPDATE ledger_totals SET open_minor = open_minor - abs(OLD.low_owes_minor)
   WHERE agent_id IN (OLD.low_id, OLD.high_id) AND currency = (SELECT currency FROM groups WHERE group_id = OLD.group_id);
END;

-- Each member's balance in each group (positive: the others owe them), from the same pairs: what balances and
-- settle-up read when a group simplifies debts, one row per member instead of one per pair of members.
CREATE TABLE group_balances (
  group_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  balance_minor INTEGER NOT NULL,
  PRIMARY KEY (group_id, agent_id)
) WITHOUT ROWID;

INSERT INTO group_balances (group_id, agent_id, balance_minor)
SELECT group_id, agent, sum(owed) FROM (
  SELECT group_id, high_id AS agent, low_owes_minor AS owed FROM ledger_pairs
  UNION ALL
  SELECT group_id, low_id, -low_owes_minor FROM ledger_pairs
) GROUP BY group_id, agent;

CREATE TRIGGER group_balances_insert AFTER INSERT ON ledger_pairs BEGIN
  INSERT INTO group_balances (group_id, agent_id, balance_minor)
  SELECT NEW.group_id, a, owed FROM (SELECT NEW.high_id AS a, NEW.low_owes_minor AS owed UNION ALL SELECT NEW.low_id, -NEW.low_owes_minor) WHERE true
  ON CONFLICT (group_id, agent_id) DO UPDATE SET balance_minor = balance_minor + excluded.balance_minor;
END;

CREATE TRIGGER group_balances_update AFTER UPDATE OF low_owes_minor ON ledger_pairs BEGIN
  UPDATE group_balances SET balance_minor = balance_minor + (NEW.low_owes_minor - OLD.low_owes_minor)
   WHERE group_id = NEW.group_id AND agent_id = NEW.high_id;
  UPDATE group_balances SET balance_minor = balance_minor - (NEW.low_owes_minor - OLD.low_owes_minor)
   WHERE group_id = NEW.group_id AND agent_id = NEW.low_id;
END;

CREATE TRIGGER group_balances_delete AFTER DELETE ON ledger_pairs BEGIN
  UPDATE group_balances SET balance_minor = balance_minor - OLD.low_owes_minor WHERE group_id = OLD.group_id AND agent_id = OLD.high_id;
  UPDATE group_balances SET balance_minor = balance_minor + OLD.low_owes_minor WHERE group_id = OLD.group_id AND agent_id = OLD.low_id;
END;
