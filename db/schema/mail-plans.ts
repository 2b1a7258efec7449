import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0003_mail_plans.sql.
export const envelopes = sqliteTable(
  "envelopes",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    envelopeId: text("envelope_id").notNull().unique(),
    threadId: text("thread_id").notNull(),
    inReplyTo: text("in_reply_to"),
    senderId: text("sender_id").notNull(),
    subject: text("subject").notNull(),
    bodyMd: text("body_md").notNull(),
    refs: text("refs", { mode: "json" }).$type<Record<string, string>>().notNull().default({}),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("envelopes_sender").on(t.senderId, t.seq),
    index("envelopes_thread").on(t.threadId, t.seq),
    // 0017_quota_indexes.sql
    index("envelopes_sender_created").on(t.senderId, t.createdAt),
  ],
);

export const envelopeRecipients = sqliteTable(
  "envelope_recipients",
  {
    envelopeId: text("envelope_id").notNull(),
    agentId: text("agent_id").notNull(),
    position: integer("position").notNull(),
    delivered: integer("delivered", { mode: "boolean" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.envelopeId, t.agentId] }), index("envelope_recipients_agent").on(t.agentId, t.delivered)],
);

export const plans = sqliteTable(
  "plans",
  {
    planId: text("plan_id").primaryKey(),
    organiserId: text("organiser_id").notNull(),
    title: text("title").notNull(),
    description: text("description").notNull().default(""),
    groupId: text("group_id"),
    respondBy: text("respond_by"),
    state: text("state", { enum: ["proposed", "scheduled", "cancelled"] }).notNull(),
    chosenOptionId: text("chosen_option_id"),
    startsAt: text("starts_at").notNull(),
    endsAt: text("ends_at").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("plans_organiser").on(t.organiserId, t.startsAt)],
);

export const planOptions = sqliteTable(
  "plan_options",
  {
    optionId: text("option_id").primaryKey(),
    planId: text("plan_id").notNull(),
    position: integer("position").notNull(),
    startsAt: text("starts_at").notNull(),
    endsAt: text("ends_at"),
    place: text("place"),
  },
  (t) => [index("plan_options_plan").on(t.planId, t.position)],
);

export const planInvitees = sqliteTable(
  "plan_invitees",
  {
    planId: text("plan_id").notNull(),
    agentId: text("agent_id").notNull(),
    position: integer("position").notNull(),
    delivered: integer("delivered", { mode: "boolean" }).notNull(),
    response: text("response", { enum: ["yes", "no", "maybe"] }),
    optionIds: text("option_ids", { mode: "json" }).$type<string[]>().notNull().default([]),
    respondedAt: text("responded_at"),
  },
  (t) => [primaryKey({ columns: [t.planId, t.agentId] }), index("plan_invitees_agent").on(t.agentId, t.delivered)],
);
