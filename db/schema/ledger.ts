import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0002_ledger.sql.
export const groups = sqliteTable("groups", {
  groupId: text("group_id").primaryKey(),
  name: text("name").notNull(),
  description: text("description"),
  currency: text("currency").notNull(),
  kind: text("kind", { enum: ["group", "direct"] }).notNull(),
  directKey: text("direct_key").unique(),
  simplifyDebts: integer("simplify_debts", { mode: "boolean" }).notNull().default(true),
  archived: integer("archived", { mode: "boolean" }).notNull().default(false),
  createdBy: text("created_by").notNull(),
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
});

export const groupMembers = sqliteTable(
  "group_members",
  {
    groupId: text("group_id").notNull(),
    agentId: text("agent_id").notNull(),
    role: text("role", { enum: ["owner", "member"] }).notNull(),
    joinedAt: text("joined_at").notNull(),
    leftAt: text("left_at"),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.agentId] }), index("group_members_agent").on(t.agentId)],
);

export const groupInvites = sqliteTable(
  "group_invites",
  {
    inviteId: text("invite_id").primaryKey(),
    groupId: text("group_id").notNull(),
    createdBy: text("created_by").notNull(),
    targetId: text("target_id"),
    code: text("code").unique(),
    maxUses: integer("max_uses").notNull().default(1),
    uses: integer("uses").notNull().default(0),
    state: text("state", { enum: ["pending", "accepted", "declined", "revoked"] }).notNull(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    respondedAt: text("responded_at"),
  },
  (t) => [index("group_invites_target").on(t.targetId, t.state)],
);

export const expenses = sqliteTable(
  "expenses",
  {
    expenseId: text("expense_id").primaryKey(),
    groupId: text("group_id").notNull(),
    description: text("description").notNull(),
    amountMinor: integer("amount_minor").notNull(),
    originalCurrency: text("original_currency"),
    originalAmountMinor: integer("original_amount_minor"),
    exchangeRate: text("exchange_rate"),
    date: text("date").notNull(),
    category: text("category"),
    split: text("split", { mode: "json" }).$type<{ mode: string; among: { handle: string; value?: string | number | null }[] }>().notNull(),
    paidBy: text("paid_by", { mode: "json" }).$type<{ handle: string; amount_minor: number }[]>().notNull(),
    notes: text("notes"),
    repeat: text("repeat", { enum: ["none", "weekly", "fortnightly", "monthly", "yearly"] })
      .notNull()
      .default("none"),
    nextOccurrence: text("next_occurrence"),
    recurringOf: text("recurring_of"),
    refs: text("refs", { mode: "json" }).$type<Record<string, string>>().notNull().default({}),
    state: text("state", { enum: ["active", "disputed"] })
      .notNull()
      .default("active"),
    deleted: integer("deleted", { mode: "boolean" }).notNull().default(false),
    version: integer("version").notNull().default(1),
    createdBy: text("created_by").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    // 0004_expenses_extra.sql
    descriptionBy: text("description_by"),
    notesBy: text("notes_by"),
    // 0022_refunds_spending_batches.sql
    kind: text("kind", { enum: ["expense", "refund"] })
      .notNull()
      .default("expense"),
    // 0023_receipts_rates_series.sql
    repeatUntil: text("repeat_until"),
    rateSource: text("rate_source"),
  },
  (t) => [
    index("expenses_group_date").on(t.groupId, sql`${t.date} DESC`, sql`${t.createdAt} DESC`),
    // 0018_export_order.sql
    index("expenses_group_export").on(t.groupId, t.date),
    index("expenses_next_occurrence").on(t.nextOccurrence).where(sql`${t.nextOccurrence} IS NOT NULL`),
    uniqueIndex("expenses_occurrence").on(t.recurringOf, t.date).where(sql`${t.recurringOf} IS NOT NULL`),
    // 0017_quota_indexes.sql
    index("expenses_creator_group").on(t.createdBy, t.groupId, t.createdAt),
  ],
);

export const expenseShares = sqliteTable(
  "expense_shares",
  {
    expenseId: text("expense_id").notNull(),
    groupId: text("group_id").notNull(),
    agentId: text("agent_id").notNull(),
    paidMinor: integer("paid_minor").notNull(),
    shareMinor: integer("share_minor").notNull(),
  },
  (t) => [primaryKey({ columns: [t.expenseId, t.agentId] }), index("expense_shares_by_group").on(t.groupId)],
);

export const expenseHistory = sqliteTable(
  "expense_history",
  {
    expenseId: text("expense_id").notNull(),
    version: integer("version").notNull(),
    action: text("action").notNull(),
    changedBy: text("changed_by").notNull(),
    changedAt: text("changed_at").notNull(),
    snapshot: text("snapshot", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.expenseId, t.version, t.action] })],
);

// Mirrors db/migrations/0004_expenses_extra.sql.
export const expenseResponses = sqliteTable(
  "expense_responses",
  {
    expenseId: text("expense_id").notNull(),
    agentId: text("agent_id").notNull(),
    action: text("action", { enum: ["confirm", "dispute"] }).notNull(),
    reason: text("reason"),
    version: integer("version").notNull(),
    respondedAt: text("responded_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.expenseId, t.agentId] })],
);

// Mirrors db/migrations/0007_ledger_pairs.sql.
export const ledgerPairs = sqliteTable(
  "ledger_pairs",
  {
    groupId: text("group_id").notNull(),
    lowId: text("low_id").notNull(),
    highId: text("high_id").notNull(),
    lowOwesMinor: integer("low_owes_minor").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.lowId, t.highId] })],
);

/** Kept by triggers (0014_ledger_totals.sql); never written by code. */
export const ledgerTotals = sqliteTable(
  "ledger_totals",
  {
    agentId: text("agent_id").notNull(),
    currency: text("currency").notNull(),
    openMinor: integer("open_minor").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.currency] })],
);

/** Kept by triggers (0014_ledger_totals.sql); never written by code. */
export const groupBalances = sqliteTable(
  "group_balances",
  {
    groupId: text("group_id").notNull(),
    agentId: text("agent_id").notNull(),
    balanceMinor: integer("balance_minor").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.agentId] })],
);

// 0022_refunds_spending_batches.sql: get_spending's totals, kept by triggers; agent_id '' holds the expenses' own amounts.
export const spendingTotals = sqliteTable(
  "spending_totals",
  {
    groupId: text("group_id").notNull(),
    agentId: text("agent_id").notNull(),
    date: text("date").notNull(),
    category: text("category").notNull(),
    amountHi: integer("amount_hi").notNull(),
    amountLo: integer("amount_lo").notNull(),
    paidHi: integer("paid_hi").notNull(),
    paidLo: integer("paid_lo").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.agentId, t.date, t.category] })],
);

export const ledgerPairsBuilt = sqliteTable("ledger_pairs_built", {
  groupId: text("group_id").primaryKey(),
  builtAt: text("built_at").notNull(),
});

export const payments = sqliteTable(
  "payments",
  {
    paymentId: text("payment_id").primaryKey(),
    groupId: text("group_id").notNull(),
    fromId: text("from_id").notNull(),
    toId: text("to_id").notNull(),
    amountMinor: integer("amount_minor").notNull(),
    state: text("state", { enum: ["pending", "confirmed", "rejected", "voided"] }).notNull(),
    note: text("note"),
    createdBy: text("created_by").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    // 0013_payment_corrections.sql
    originalCurrency: text("original_currency"),
    originalAmountMinor: integer("original_amount_minor"),
    exchangeRate: text("exchange_rate"),
    voidedBy: text("voided_by"),
    voidedAt: text("voided_at"),
    // 0022_refunds_spending_batches.sql
    batchId: text("batch_id"),
  },
  (t) => [
    index("payments_group").on(t.groupId, t.state, sql`${t.createdAt} DESC`),
    index("payments_group_export").on(t.groupId),
    index("payments_batch").on(t.batchId).where(sql`${t.batchId} IS NOT NULL`),
  ],
);

export const ledgerActivity = sqliteTable(
  "ledger_activity",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    groupId: text("group_id").notNull(),
    actorId: text("actor_id").notNull(),
    action: text("action").notNull(),
    summary: text("summary").notNull(),
    refs: text("refs", { mode: "json" }).$type<Record<string, string>>().notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("ledger_activity_group").on(t.groupId, sql`${t.seq} DESC`)],
);

// Mirrors db/migrations/0021_placeholders.sql.
export const groupPlaceholders = sqliteTable(
  "group_placeholders",
  {
    memberId: text("member_id").primaryKey(),
    groupId: text("group_id").notNull(),
    name: text("name").notNull(),
    createdBy: text("created_by").notNull(),
    createdAt: text("created_at").notNull(),
    claimHash: text("claim_hash").unique(),
    claimedBy: text("claimed_by"),
    claimedAt: text("claimed_at"),
    /** 0029_limits.sql: the claim link works until then. */
    claimExpiresAt: text("claim_expires_at"),
  },
  (t) => [index("group_placeholders_group").on(t.groupId)],
);

// 0023_receipts_rates_series.sql
export const exchangeRates = sqliteTable(
  "exchange_rates",
  {
    date: text("date").notNull(),
    currency: text("currency").notNull(),
    perEur: text("per_eur").notNull(),
    source: text("source").notNull(),
    fetchedAt: text("fetched_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.currency, t.date] })],
);

export const expenseAttachments = sqliteTable(
  "expense_attachments",
  {
    attachmentId: text("attachment_id").primaryKey(),
    expenseId: text("expense_id").notNull(),
    groupId: text("group_id").notNull(),
    filename: text("filename").notNull(),
    mediaType: text("media_type").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    sha256: text("sha256").notNull(),
    content: blob("content", { mode: "buffer" }).notNull(),
    uploadedBy: text("uploaded_by").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("expense_attachments_expense").on(t.expenseId, t.createdAt),
    index("expense_attachments_group").on(t.groupId, t.sizeBytes),
    index("expense_attachments_uploader").on(t.uploadedBy, t.sizeBytes),
  ],
);
