-- Who wrote an expense's description and notes: other members see that text as untrusted, attributed to its author.
ALTER TABLE expenses ADD COLUMN description_by TEXT REFERENCES agents(agent_id);
ALTER TABLE expenses ADD COLUMN notes_by TEXT REFERENCES agents(agent_id);

-- Each participant's latest answer to an expense (respond_expense); the expense is disputed while
-- any answer given to its current version is a dispute.
CREATE TABLE expense_responses (
  expense_id TEXT NOT NULL REFERENCES expenses(expense_id),
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  action TEXT NOT NULL,
  reason TEXT,
  version INTEGER NOT NULL,
  responded_at TEXT NOT NULL,
  PRIMARY KEY (expense_id, agent_id)
);
