import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Mirrors db/migrations/0006_auth.sql and the columns 0010 adds.

/** A login at the OpenID Connect provider, as the provider vouched for it. */
export interface ProviderLogin {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
}
/** A WebAuthn challenge handed to a browser, with what it is for (and, signing up, the handle the passkey names). */
export interface WebauthnChallenge {
  challenge: string;
  purpose: "signup" | "signin" | "add";
  handle?: string;
  expiresAt: string;
}

export const joinSessions = sqliteTable("join_sessions", {
  sessionId: text("session_id").primaryKey(),
  pollTokenHash: text("poll_token_hash").notNull().unique(),
  userCodeHash: text("user_code_hash").notNull().unique(),
  clientName: text("client_name").notNull(),
  suggestedHandle: text("suggested_handle"),
  displayName: text("display_name"),
  inviteCode: text("invite_code"),
  status: text("status", { enum: ["pending", "connected", "denied"] }).notNull(),
  agentId: text("agent_id"),
  created: integer("created", { mode: "boolean" }),
  clientId: text("client_id"),
  joinedGroupId: text("joined_group_id"),
  createdAt: text("created_at").notNull(),
  expiresAt: text("expires_at").notNull(),
  finishedAt: text("finished_at"),
  keyIssuedAt: text("key_issued_at"),
  // 0016_web_clients.sql: the web session's client that approved it (an existing handle), which it is obtained through.
  parentClientId: text("parent_client_id"),
});

export const webSessions = sqliteTable(
  "web_sessions",
  {
    sessionHash: text("session_hash").primaryKey(),
    csrfToken: text("csrf_token").notNull(),
    agentId: text("agent_id"),
    access: text("access", { enum: ["full", "settings"] }),
    joinSessionId: text("join_session_id"),
    oauthRequest: text("oauth_request", { mode: "json" }).$type<Record<string, string>>(),
    oidcFlow: text("oidc_flow", { mode: "json" }).$type<Record<string, string>>(),
    oidcIdentity: text("oidc_identity", { mode: "json" }).$type<ProviderLogin>(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    // 0010_merge_and_client_metadata.sql
    providerLogin: text("provider_login", { mode: "json" }).$type<ProviderLogin>(),
    // 0016_web_clients.sql: the signed-in browser's client (kind web) and what it may do.
    clientId: text("client_id"),
    scopes: text("scopes"),
    // 0019_accounts.sql: the WebAuthn ceremony this browser is in the middle of.
    webauthnChallenge: text("webauthn_challenge", { mode: "json" }).$type<WebauthnChallenge>(),
  },
  (t) => [index("web_sessions_expiry").on(t.expiresAt)],
);

export const signinCodes = sqliteTable(
  "signin_codes",
  {
    codeId: text("code_id").primaryKey(),
    agentId: text("agent_id").notNull(),
    webSessionHash: text("web_session_hash").notNull(),
    codeHash: text("code_hash").notNull(),
    attempts: integer("attempts").notNull().default(0),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    usedAt: text("used_at"),
    // 0016_web_clients.sql: the first client that read the code, which a session signed in with it is obtained through
    // (for an SMS code, the client its phone is tied to: 0028_factor_origins.sql).
    readByClientId: text("read_by_client_id"),
    // 0020_people.sql: sent to the handle's inbox, or by SMS to its verified phone.
    channel: text("channel", { enum: ["inbox", "sms"] })
      .notNull()
      .default("inbox"),
  },
  (t) => [index("signin_codes_agent").on(t.agentId, t.createdAt), index("signin_codes_session").on(t.webSessionHash)],
);

/** 0020_people.sql: a code sent by SMS to a number being added on the settings page. */
export const phoneCodes = sqliteTable(
  "phone_codes",
  {
    codeId: text("code_id").primaryKey(),
    agentId: text("agent_id").notNull(),
    webSessionHash: text("web_session_hash").notNull(),
    phone: text("phone").notNull(),
    codeHash: text("code_hash").notNull(),
    attempts: integer("attempts").notNull().default(0),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    usedAt: text("used_at"),
  },
  (t) => [index("phone_codes_agent").on(t.agentId, t.createdAt), index("phone_codes_session").on(t.webSessionHash)],
);

export const settingsLinks = sqliteTable("settings_links", {
  tokenHash: text("token_hash").primaryKey(),
  agentId: text("agent_id").notNull(),
  createdAt: text("created_at").notNull(),
  expiresAt: text("expires_at").notNull(),
  usedAt: text("used_at"),
  // 0016_web_clients.sql: the client that asked for the link, and its scopes (a settings page never does more).
  clientId: text("client_id"),
  scopes: text("scopes"),
});

export const oauthClients = sqliteTable("oauth_clients", {
  clientId: text("client_id").primaryKey(),
  clientName: text("client_name"),
  redirectUris: text("redirect_uris", { mode: "json" }).$type<string[]>().notNull(),
  grantTypes: text("grant_types", { mode: "json" }).$type<string[]>().notNull(),
  scope: text("scope"),
  createdAt: text("created_at").notNull(),
  // 0010_merge_and_client_metadata.sql
  metadataExpiresAt: text("metadata_expires_at"),
});

export const oauthCodes = sqliteTable("oauth_codes", {
  codeHash: text("code_hash").primaryKey(),
  oauthClientId: text("oauth_client_id").notNull(),
  agentId: text("agent_id").notNull(),
  redirectUri: text("redirect_uri").notNull(),
  codeChallenge: text("code_challenge").notNull(),
  scope: text("scope").notNull(),
  resource: text("resource").notNull(),
  createdAt: text("created_at").notNull(),
  expiresAt: text("expires_at").notNull(),
  usedAt: text("used_at"),
  clientId: text("client_id"),
  // 0016_web_clients.sql: the web session's client that consented.
  parentClientId: text("parent_client_id"),
});

export const oauthRefreshTokens = sqliteTable(
  "oauth_refresh_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    clientId: text("client_id").notNull(),
    oauthClientId: text("oauth_client_id").notNull(),
    scope: text("scope").notNull(),
    resource: text("resource").notNull(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    usedAt: text("used_at"),
    revokedAt: text("revoked_at"),
  },
  (t) => [index("oauth_refresh_tokens_client").on(t.clientId)],
);

export const serverSecrets = sqliteTable("server_secrets", {
  name: text("name").primaryKey(),
  secret: text("secret").notNull(),
  createdAt: text("created_at").notNull(),
});

export const oauthSigningKeys = sqliteTable("oauth_signing_keys", {
  kid: text("kid").primaryKey(),
  issuer: text("issuer").notNull(),
  privateJwk: text("private_jwk").notNull(),
  publicJwk: text("public_jwk").notNull(),
  createdAt: text("created_at").notNull(),
  retiredAt: text("retired_at"),
});

export const oidcIdentities = sqliteTable(
  "oidc_identities",
  {
    issuer: text("issuer").notNull(),
    subject: text("subject").notNull(),
    agentId: text("agent_id").notNull(),
    email: text("email"),
    emailVerified: integer("email_verified", { mode: "boolean" }).notNull().default(false),
    createdAt: text("created_at").notNull(),
    // 0028_factor_origins.sql: the browser client it was linked in, when that browser descends from another client.
    setThroughClientId: text("set_through_client_id"),
  },
  (t) => [primaryKey({ columns: [t.issuer, t.subject] }), index("oidc_identities_agent").on(t.agentId)],
);

// 0019_accounts.sql: how a person signs in without an agent (passwords, passkeys) and recovers (reset links).
export const passwords = sqliteTable("passwords", {
  agentId: text("agent_id").primaryKey(),
  hash: text("hash").notNull(),
  updatedAt: text("updated_at").notNull(),
  // 0028_factor_origins.sql: the browser client it was set in, when that browser descends from another client.
  setThroughClientId: text("set_through_client_id"),
});

export const passkeys = sqliteTable(
  "passkeys",
  {
    credentialId: text("credential_id").primaryKey(),
    agentId: text("agent_id").notNull(),
    // base64url of the COSE public key
    publicKey: text("public_key").notNull(),
    counter: integer("counter").notNull(),
    transports: text("transports", { mode: "json" }).$type<string[]>(),
    name: text("name").notNull(),
    createdAt: text("created_at").notNull(),
    lastUsedAt: text("last_used_at"),
    // 0028_factor_origins.sql: the browser client it was added in, when that browser descends from another client.
    setThroughClientId: text("set_through_client_id"),
  },
  (t) => [index("passkeys_agent").on(t.agentId)],
);

export const resetLinks = sqliteTable(
  "reset_links",
  {
    tokenHash: text("token_hash").primaryKey(),
    agentId: text("agent_id").notNull(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    usedAt: text("used_at"),
    // 0031_email.sql: a link sent by e-mail (reset or signin), tied to what the address was set through.
    purpose: text("purpose", { enum: ["reset", "signin"] })
      .notNull()
      .default("reset"),
    setThroughClientId: text("set_through_client_id"),
  },
  (t) => [index("reset_links_set_through").on(t.setThroughClientId).where(sql`${t.setThroughClientId} IS NOT NULL`)],
);
