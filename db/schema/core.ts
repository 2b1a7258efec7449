import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0001_core.sql; the SQL file is the source of truth for the database.
export const agents = sqliteTable("agents", {
  agentId: text("agent_id").primaryKey(),
  handle: text("handle").notNull().unique(),
  displayName: text("display_name").notNull(),
  description: text("description"),
  contactCode: text("contact_code").unique(),
  email: text("email"),
  emailVerified: integer("email_verified", { mode: "boolean" }).notNull().default(false),
  phoneVerified: integer("phone_verified", { mode: "boolean" }).notNull().default(false),
  createdAt: text("created_at").notNull(),
  // 0010_merge_and_client_metadata.sql: a handle joined into another one
  retiredAt: text("retired_at"),
  mergedInto: text("merged_into"),
  // 0020_people.sql: svc users disable; the phone proved on the settings page
  disabledAt: text("disabled_at"),
  phone: text("phone"),
  // 0028_factor_origins.sql: the browser client the phone was proved in, when that browser descends from another client.
  phoneSetThroughClientId: text("phone_set_through_client_id"),
  // 0030_account_deletion.sql: the account was deleted; the row (retired) names a former member in the ledger.
  deletedAt: text("deleted_at"),
});

export const clients = sqliteTable(
  "clients",
  {
    clientId: text("client_id").primaryKey(),
    agentId: text("agent_id").notNull(),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["api_key", "oauth", "web"] }).notNull(),
    createdAt: text("created_at").notNull(),
    lastUsedAt: text("last_used_at"),
    revokedAt: text("revoked_at"),
    // 0016_web_clients.sql: the client this one was obtained through; revoking that one revokes this one.
    parentClientId: text("parent_client_id"),
  },
  (t) => [index("clients_agent").on(t.agentId), index("clients_parent").on(t.parentClientId).where(sql`${t.parentClientId} IS NOT NULL`)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    keyHash: text("key_hash").primaryKey(),
    clientId: text("client_id").notNull(),
    scopes: text("scopes").notNull(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at"),
    revokedAt: text("revoked_at"),
  },
  (t) => [index("api_keys_client").on(t.clientId)],
);

export const contacts = sqliteTable(
  "contacts",
  {
    ownerId: text("owner_id").notNull(),
    otherId: text("other_id").notNull(),
    state: text("state", { enum: ["accepted", "incoming", "outgoing", "blocked"] }).notNull(),
    source: text("source", { enum: ["code", "handle", "group"] }).notNull(),
    note: text("note"),
    requestedAt: text("requested_at").notNull(),
    respondedAt: text("responded_at"),
  },
  (t) => [primaryKey({ columns: [t.ownerId, t.otherId] }), index("contacts_owner_state").on(t.ownerId, t.state)],
);

export const contactDeclines = sqliteTable(
  "contact_declines",
  {
    requesterId: text("requester_id").notNull(),
    targetId: text("target_id").notNull(),
    declinedAt: text("declined_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.requesterId, t.targetId] })],
);

export const inboxItems = sqliteTable(
  "inbox_items",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    itemId: text("item_id").notNull().unique(),
    agentId: text("agent_id").notNull(),
    type: text("type").notNull(),
    app: text("app").notNull(),
    fromAgentId: text("from_agent_id"),
    summaryMd: text("summary_md").notNull(),
    payload: text("payload", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    note: text("note", { mode: "json" }).$type<{ untrusted_content: string; source: string } | null>(),
    refs: text("refs", { mode: "json" }).$type<Record<string, string>>().notNull(),
    requiresAction: integer("requires_action", { mode: "boolean" }).notNull(),
    suggestedTools: text("suggested_tools", { mode: "json" }).$type<string[]>().notNull(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    seen: integer("seen", { mode: "boolean" }).notNull().default(false),
    resolved: integer("resolved", { mode: "boolean" }).notNull().default(false),
    dismissed: integer("dismissed", { mode: "boolean" }).notNull().default(false),
    kept: integer("kept", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    index("inbox_agent_seq").on(t.agentId, t.dismissed, t.seq),
    // The list of unseen items from a cursor; also read by 0.9's count (0012_inbox_counts.sql).
    index("inbox_unseen").on(t.agentId, t.seen, t.dismissed, t.seq, t.expiresAt),
    // Items waiting for a decision: the summary's newest unread asks, and 0.9's count (0015_inbox_pending_partial.sql).
    index("inbox_pending_action").on(t.agentId, t.seen, t.seq, t.expiresAt).where(sql`${t.requiresAction} = 1 AND ${t.resolved} = 0 AND ${t.dismissed} = 0`),
    index("inbox_agent_expiry").on(t.agentId, t.expiresAt),
    index("inbox_unread_news").on(t.agentId, t.seq).where(sql`${t.seen} = 0 AND ${t.dismissed} = 0 AND ${t.requiresAction} = 0`),
  ],
);

/** Kept by triggers (0012_inbox_counts.sql); never written by code. */
export const inboxCounts = sqliteTable("inbox_counts", {
  agentId: text("agent_id").primaryKey(),
  unread: integer("unread").notNull().default(0),
  requiresAction: integer("requires_action").notNull().default(0),
});

export const inboxCursors = sqliteTable("inbox_cursors", {
  clientId: text("client_id").primaryKey(),
  seq: integer("seq").notNull(),
});

export const idempotencyRecords = sqliteTable(
  "idempotency_records",
  {
    agentId: text("agent_id").notNull(),
    key: text("key").notNull(),
    tool: text("tool").notNull(),
    requestHash: text("request_hash").notNull(),
    response: text("response"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.key] })],
);

export const platformInvites = sqliteTable("platform_invites", {
  code: text("code").primaryKey(),
  maxUses: integer("max_uses").notNull(),
  uses: integer("uses").notNull().default(0),
  note: text("note"),
  createdAt: text("created_at").notNull(),
  expiresAt: text("expires_at"),
  revokedAt: text("revoked_at"),
});

// db/migrations/0029_limits.sql (replaced 0009's attempt_counters)
export const attemptTimes = sqliteTable(
  "attempt_times",
  {
    key: text("key").primaryKey(),
    /** JSON list of epoch milliseconds: the key's latest attempts, at most its limit. */
    times: text("times").notNull(),
    expiresAt: text("expires_at").notNull(),
  },
  (t) => [index("attempt_times_expires").on(t.expiresAt)],
);
