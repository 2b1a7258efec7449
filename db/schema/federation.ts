import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0025_federation.sql and 0026_federation_trust.sql; the SQL files are the source of truth for
// the database.
export const federationKeys = sqliteTable("federation_keys", {
  kid: text("kid").primaryKey(),
  privateJwk: text("private_jwk").notNull(),
  publicJwk: text("public_jwk").notNull(),
  createdAt: text("created_at").notNull(),
  notBefore: text("not_before").notNull(),
  expiresAt: text("expires_at"),
});

export const remoteAgents = sqliteTable("remote_agents", {
  agentId: text("agent_id").primaryKey(),
  address: text("address").notNull().unique(),
  host: text("host").notNull(),
  handle: text("handle").notNull(),
  createdAt: text("created_at").notNull(),
});

export const federationSettings = sqliteTable("federation_settings", {
  agentId: text("agent_id").primaryKey(),
  accept: text("accept", { enum: ["code", "address", "none"] })
    .notNull()
    .default("code"),
});

export const federationRequests = sqliteTable("federation_requests", {
  eventId: text("event_id").primaryKey(),
  agentId: text("agent_id").notNull(),
  host: text("host").notNull(),
  createdAt: text("created_at").notNull(),
});

export const federationOutbox = sqliteTable(
  "federation_outbox",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    destination: text("destination").notNull(),
    eventId: text("event_id").notNull().unique(),
    event: text("event", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    createdAt: text("created_at").notNull(),
    txnId: text("txn_id"),
    sentAt: text("sent_at"),
    /** The local agent the event speaks for (event.from). */
    senderId: text("sender_id"),
    /** Refused by the other server, or given up: its sender was told (network.undelivered). */
    undelivered: integer("undelivered", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    index("federation_outbox_pending").on(t.destination, t.seq).where(sql`${t.sentAt} IS NULL`),
    index("federation_outbox_pending_senders").on(t.senderId, t.destination).where(sql`${t.sentAt} IS NULL`),
  ],
);

export const federationTxnsOut = sqliteTable("federation_txns_out", {
  destination: text("destination").primaryKey(),
  txnId: text("txn_id").notNull(),
  body: text("body").notNull(),
  lastSeq: integer("last_seq").notNull(),
  firstTriedAt: text("first_tried_at").notNull(),
  attempts: integer("attempts").notNull().default(0),
  nextTryAt: text("next_try_at").notNull(),
});

export const federationTxnsIn = sqliteTable(
  "federation_txns_in",
  {
    origin: text("origin").notNull(),
    txnId: text("txn_id").notNull(),
    bodyDigest: text("body_digest").notNull(),
    answer: text("answer").notNull(),
    receivedAt: text("received_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.origin, t.txnId] })],
);

export const federationEventsSeen = sqliteTable(
  "federation_events_seen",
  {
    origin: text("origin").notNull(),
    eventId: text("event_id").notNull(),
    receivedAt: text("received_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.origin, t.eventId] })],
);

export const federationPeerKeys = sqliteTable("federation_peer_keys", {
  host: text("host").primaryKey(),
  jwks: text("jwks").notNull(),
  fetchedAt: text("fetched_at").notNull(),
  refetchedAt: text("refetched_at"),
  /** When a transaction signed with these keys last verified; null: the host never proved itself. */
  verifiedAt: text("verified_at"),
});

export const federationHosts = sqliteTable("federation_hosts", {
  host: text("host").primaryKey(),
  blocked: integer("blocked", { mode: "boolean" }).notNull().default(false),
  firstSeenAt: text("first_seen_at").notNull(),
});

export const federationLimits = sqliteTable(
  "federation_limits",
  {
    host: text("host").notNull(),
    kind: text("kind").notNull(),
    windowStart: text("window_start").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.host, t.kind, t.windowStart] })],
);

export const federationEnvelopeBytes = sqliteTable(
  "federation_envelope_bytes",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    address: text("address").notNull(),
    bytes: integer("bytes").notNull(),
    receivedAt: text("received_at").notNull(),
  },
  (t) => [index("federation_envelope_bytes_by_address").on(t.address, t.receivedAt), index("federation_envelope_bytes_by_time").on(t.receivedAt)],
);
