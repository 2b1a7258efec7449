-- The shared-expense ledger: groups, memberships, invitations, expenses with their shares, payments, activity.
CREATE TABLE groups (
  group_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT,
  currency TEXT NOT NULL,
  kind TEXT NOT NULL,
  -- "smaller-id:larger-id" for a direct ledger, so a pair has exactly one
  direct_key TEXT UNIQUE,
  simplify_debts INTEGER NOT NULL DEFAULT 1,
  archived INTEGER NOT NULL DEFAULT 0,
  created_by TEXT NOT NULL REFERENCES agents(agent_id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- A member who left keeps the row (left_at set) so old expenses still name them.
CREATE TABLE group_members (
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  role TEXT NOT NULL,
  joined_at TEXT NOT NULL,
  left_at TEXT,
  PRIMARY KEY (group_id, agent_id)
);
CREATE INDEX group_members_agent ON group_members(agent_id);

CREATE TABLE group_invites (
  invite_id TEXT PRIMARY KEY,
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  created_by TEXT NOT NULL REFERENCES agents(agent_id),
  -- a targeted invitation names its invitee; a shareable one has a code instead
  target_id TEXT REFERENCES agents(agent_id),
  code TEXT UNIQUE,
  max_uses INTEGER NOT NULL DEFAULT 1,
  uses INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  responded_at TEXT
);
CREATE INDEX group_invites_target ON group_invites(target_id, state);

CREATE TABLE expenses (
  expense_id TEXT PRIMARY KEY,
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  description TEXT NOT NULL,
  -- always in the group's currency; the original amount is kept when another currency was given
  amount_minor INTEGER NOT NULL,
  original_currency TEXT,
  original_amount_minor INTEGER,
  exchange_rate TEXT,
  date TEXT NOT NULL,
  category TEXT,
  split TEXT NOT NULL,
  paid_by TEXT NOT NULL,
  notes TEXT,
  repeat TEXT NOT NULL DEFAULT 'none',
  next_occurrence TEXT,
  recurring_of TEXT,
  refs TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL DEFAULT 'active',
  deleted INTEGER NOT NULL DEFAULT 0,
  version INTEGER NOT NULL DEFAULT 1,
  created_by TEXT NOT NULL REFERENCES agents(agent_id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX expenses_group_date ON expenses(group_id, date DESC, created_at DESC);
CREATE INDEX expenses_next_occurrence ON expenses(next_occurrence) WHERE next_occurrence IS NOT NULL;
-- each occurrence of a recurring expense exists once, however often the job runs
CREATE UNIQUE INDEX expenses_occurrence ON expenses(recurring_of, date) WHERE recurring_of IS NOT NULL;

-- Per participant of an expense: what they paid and what their share is (net = paid - share).
CREATE TABLE expense_shares (
  expense_id TEXT NOT NULL REFERENCES expenses(expense_id),
  group_id TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  paid_minor INTEGER NOT NULL,
  share_minor INTEGER NOT NULL,
  PRIMARY KEY (expense_id, agent_id)
);
CREATE INDEX expense_shares_group ON expense_shares(group_id, agent_id);

CREATE TABLE expense_history (
  expense_id TEXT NOT NULL REFERENCES expenses(expense_id),
  version INTEGER NOT NULL,
  action TEXT NOT NULL,
  changed_by TEXT NOT NULL,
  changed_at TEXT NOT NULL,
  snapshot TEXT NOT NULL,
  PRIMARY KEY (expense_id, version, action)
);

CREATE TABLE payments (
  payment_id TEXT PRIMARY KEY,
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  from_id TEXT NOT NULL REFERENCES agents(agent_id),
  to_id TEXT NOT NULL REFERENCES agents(agent_id),
  amount_minor INTEGER NOT NULL,
  state TEXT NOT NULL,
  note TEXT,
  created_by TEXT NOT NULL REFERENCES agents(agent_id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX payments_group ON payments(group_id, state, created_at DESC);

CREATE TABLE ledger_activity (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id TEXT NOT NULL REFERENCES groups(group_id),
  actor_id TEXT NOT NULL REFERENCES agents(agent_id),
  action TEXT NOT NULL,
  summary TEXT NOT NULL,
  refs TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX ledger_activity_group ON ledger_activity(group_id, seq DESC);
