-- Envelopes (agent mail) and plans (things to do together).
-- seq orders envelopes for listing; envelope_id is what callers see.
CREATE TABLE envelopes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  envelope_id TEXT NOT NULL UNIQUE,
  -- the first envelope of a thread names it: thread_id = that envelope's id
  thread_id TEXT NOT NULL,
  in_reply_to TEXT,
  sender_id TEXT NOT NULL REFERENCES agents(agent_id),
  subject TEXT NOT NULL,
  -- stored exactly as sent; never rendered as HTML
  body_md TEXT NOT NULL,
  refs TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
);
CREATE INDEX envelopes_sender ON envelopes(sender_id, seq);
CREATE INDEX envelopes_thread ON envelopes(thread_id, seq);

-- Everyone the sender addressed; delivered = 0 when the recipient had blocked the sender (silently dropped,
-- so the recipient never sees it while the sender's view is unchanged).
CREATE TABLE envelope_recipients (
  envelope_id TEXT NOT NULL REFERENCES envelopes(envelope_id),
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  position INTEGER NOT NULL,
  delivered INTEGER NOT NULL,
  PRIMARY KEY (envelope_id, agent_id)
);
CREATE INDEX envelope_recipients_agent ON envelope_recipients(agent_id, delivered);

CREATE TABLE plans (
  plan_id TEXT PRIMARY KEY,
  organiser_id TEXT NOT NULL REFERENCES agents(agent_id),
  title TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  group_id TEXT REFERENCES groups(group_id),
  respond_by TEXT,
  state TEXT NOT NULL,
  chosen_option_id TEXT,
  -- when the plan happens, kept in step with its options: the chosen option once scheduled,
  -- else the earliest start and the latest end of all options; list_plans sorts and splits on these
  starts_at TEXT NOT NULL,
  ends_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX plans_organiser ON plans(organiser_id, starts_at);

CREATE TABLE plan_options (
  option_id TEXT PRIMARY KEY,
  plan_id TEXT NOT NULL REFERENCES plans(plan_id),
  position INTEGER NOT NULL,
  starts_at TEXT NOT NULL,
  ends_at TEXT,
  place TEXT
);
CREATE INDEX plan_options_plan ON plan_options(plan_id, position);

-- delivered = 0 when the invitee had blocked the organiser: the invitation silently never reached them.
CREATE TABLE plan_invitees (
  plan_id TEXT NOT NULL REFERENCES plans(plan_id),
  agent_id TEXT NOT NULL REFERENCES agents(agent_id),
  position INTEGER NOT NULL,
  delivered INTEGER NOT NULL,
  response TEXT,
  option_ids TEXT NOT NULL DEFAULT '[]',
  responded_at TEXT,
  PRIMARY KEY (plan_id, agent_id)
);
CREATE INDEX plan_invitees_agent ON plan_invitees(agent_id, delivered);
