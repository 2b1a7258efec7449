import { sql } from "drizzle-orm";
import { index, primaryKey, sqliteTable, text, integer } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0033_group_events.sql.
export const groupEvents = sqliteTable(
  "group_events",
  {
    groupId: text("group_id").notNull(),
    seq: integer("seq").notNull(),
    type: text("type").notNull(),
    body: text("body").notNull(),
    hash: text("hash").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.seq] }), index("group_events_unsealed").on(t.groupId).where(sql`${t.hash} = ''`)],
);

export const groupHomes = sqliteTable("group_homes", {
  groupId: text("group_id").primaryKey(),
  host: text("host").notNull(),
  agentId: text("agent_id").notNull(),
  syncedAt: text("synced_at").notNull(),
  unreachableSince: text("unreachable_since"),
  askedAfter: integer("asked_after"),
  askedAt: text("asked_at"),
});

export const groupHomeAgents = sqliteTable(
  "group_home_agents",
  {
    groupId: text("group_id").notNull(),
    homeAgentId: text("home_agent_id").notNull(),
    agentId: text("agent_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.homeAgentId] })],
);
