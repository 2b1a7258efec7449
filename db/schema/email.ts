import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0031_email.sql: e-mail for people (server/domain/email/).

/** How a person hears of one kind of notification (server/contract/email.ts EMAIL_DELIVERIES). */
type EmailDelivery = "immediate" | "daily" | "off";

export const emailAddresses = sqliteTable(
  "email_addresses",
  {
    agentId: text("agent_id").primaryKey(),
    address: text("address"),
    addressKey: text("address_key"),
    confirmedAt: text("confirmed_at"),
    setThroughClientId: text("set_through_client_id"),
    pendingAddress: text("pending_address"),
    pendingHash: text("pending_hash"),
    pendingExpiresAt: text("pending_expires_at"),
    pendingSetThrough: text("pending_set_through"),
    prefs: text("prefs", { mode: "json" }).$type<Record<string, EmailDelivery>>().notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("email_addresses_key").on(t.addressKey).where(sql`${t.addressKey} IS NOT NULL`),
    index("email_addresses_pending").on(t.pendingHash).where(sql`${t.pendingHash} IS NOT NULL`),
    index("email_addresses_set_through").on(t.setThroughClientId).where(sql`${t.setThroughClientId} IS NOT NULL`),
  ],
);

export const emailEvents = sqliteTable(
  "email_events",
  {
    eventId: integer("event_id").primaryKey({ autoIncrement: true }),
    agentId: text("agent_id").notNull(),
    itemId: text("item_id").notNull(),
    kind: text("kind").notNull(),
    daily: integer("daily", { mode: "boolean" }).notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("email_events_due").on(t.daily, t.agentId, t.createdAt), index("email_events_agent").on(t.agentId, t.kind)],
);

export const emailOutbox = sqliteTable(
  "email_outbox",
  {
    mailId: text("mail_id").primaryKey(),
    agentId: text("agent_id"),
    toAddress: text("to_address").notNull(),
    toKey: text("to_key").notNull(),
    purpose: text("purpose").notNull(),
    subject: text("subject").notNull(),
    textBody: text("text_body").notNull(),
    htmlBody: text("html_body").notNull(),
    unsubscribeUrl: text("unsubscribe_url"),
    createdAt: text("created_at").notNull(),
    nextAttemptAt: text("next_attempt_at").notNull(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    sentAt: text("sent_at"),
    failedAt: text("failed_at"),
  },
  (t) => [
    index("email_outbox_due").on(t.nextAttemptAt).where(sql`${t.sentAt} IS NULL AND ${t.failedAt} IS NULL`),
    index("email_outbox_to").on(t.toKey, t.sentAt),
    index("email_outbox_sent").on(t.sentAt).where(sql`${t.sentAt} IS NOT NULL`),
    index("email_outbox_created").on(t.createdAt),
  ],
);
