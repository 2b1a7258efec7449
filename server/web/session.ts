// Browser sessions of the pages: an HttpOnly SameSite cookie holding a secret, the row keyed by its hash, a CSRF
// token per session, and a fresh secret whenever the human signs in (no session fixation).
// A GET never writes: a browser without a row holds only its cookie, and its CSRF token is derived from the cookie
// with the server's form key (a signed double submit), so the row is made by the first form it sends. A signed-in
// browser is a client of its handle (kind web): listed with the others, ended by disconnecting it, and ended with the
// client it was obtained through.
import { and, eq, gt, lte, or } from "drizzle-orm";
import { createHmac } from "node:crypto";
import { requireWrite, snapshotOf, type Tx } from "../../db/client.ts";
import { agents, clients, serverSecrets, webSessions } from "../../db/schema/index.ts";
import { agentById, DISABLED_MESSAGE } from "../domain/agents.ts";
import { AppError } from "../errors.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { createClient, endClient, narrowScopes } from "../auth/credentials.ts";
import { constantTimeEqual, newSecret, sha256 } from "../auth/secrets.ts";

export const SESSION_COOKIE = "svc_session";
const ANONYMOUS_MS = 60 * MINUTE;
const SIGNED_IN_MS = 12 * 60 * MINUTE;
// A settings link opens a short session that reaches the settings page only.
const SETTINGS_MS = 30 * MINUTE;
const FULL_SCOPES = "svc:read svc:write";
const TOKEN_PATTERN = /^ws_[A-Za-z0-9_-]{43}$/;

/** The stored row, or a browser's session not stored yet (`stored: false`: only its cookie exists). */
export type WebSession = typeof webSessions.$inferSelect & { stored: boolean };
export type Access = "full" | "settings";

export function readCookie(req: Request, name: string): string | null {
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return v.join("=") || null;
  }
  return null;
}

export function sessionCookie(token: string, expiresAt: string, secure: boolean, now: Date): string {
  const maxAge = Math.max(0, Math.floor((Date.parse(expiresAt) - now.getTime()) / 1000));
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure ? "; Secure" : ""}`;
}

/** The key that signs anonymous forms' CSRF tokens: made once (at start, by the process that migrates), then read. */
export async function ensureFormKey(tx: Tx, now: Date): Promise<void> {
  await tx
    .insert(serverSecrets)
    .values({ name: "web_forms", secret: newSecret("wf"), createdAt: iso(now) })
    .onConflictDoNothing();
}

export async function readFormKey(tx: Tx): Promise<string> {
  const row = await tx.select({ secret: serverSecrets.secret }).from(serverSecrets).where(eq(serverSecrets.name, "web_forms")).get();
  if (!row) throw new Error("The server's form key is missing: the database was not prepared by svc serve.");
  return row.secret;
}

const csrfFor = (formKey: string, token: string) => `csrf_${createHmac("sha256", formKey).update(token).digest("base64url")}`;

/**
 * The browser's session: its row when it has a live one, else one not stored yet under its cookie (or a new cookie,
 * returned as `newToken` for the caller to set). A row whose client was disconnected is signed out. Reads only.
 */
export async function openSession(tx: Tx, req: Request, now: Date, formKey: string): Promise<{ session: WebSession; newToken: string | null }> {
  const sent = readCookie(req, SESSION_COOKIE);
  const token = sent && TOKEN_PATTERN.test(sent) ? sent : null;
  if (token) {
    const found = await tx
      .select({ s: webSessions, revokedAt: clients.revokedAt, disabledAt: agents.disabledAt })
      .from(webSessions)
      .leftJoin(clients, eq(clients.clientId, webSessions.clientId))
      .leftJoin(agents, eq(agents.agentId, webSessions.agentId))
      .where(and(eq(webSessions.sessionHash, sha256(token)), gt(webSessions.expiresAt, iso(now))))
      .get();
    if (found) {
      // A disabled agent's sessions read as signed out; enabling it again brings them back.
      const ended = found.s.agentId !== null && (found.s.clientId === null || found.revokedAt !== null || found.disabledAt !== null);
      const session = { ...found.s, stored: true };
      return { session: ended ? { ...session, agentId: null, access: null, clientId: null, scopes: null, providerLogin: null } : session, newToken: null };
    }
  }
  const fresh = token ?? newSecret("ws");
  return { session: unstored(fresh, formKey, now), newToken: token ? null : fresh };
}

function unstored(token: string, formKey: string, now: Date): WebSession {
  return {
    sessionHash: sha256(token),
    csrfToken: csrfFor(formKey, token),
    agentId: null,
    access: null,
    joinSessionId: null,
    oauthRequest: null,
    oidcFlow: null,
    oidcIdentity: null,
    providerLogin: null,
    clientId: null,
    scopes: null,
    webauthnChallenge: null,
    createdAt: iso(now),
    expiresAt: later(now, ANONYMOUS_MS),
    stored: false,
  };
}

/** The cookie of a browser that had none: it carries no row, so it may outlive the anonymous lifetime. */
export const anonymousCookie = (token: string, secure: boolean, now: Date) => sessionCookie(token, later(now, SIGNED_IN_MS), secure, now);

/** Stores a session that was only a cookie (its first form); expired rows go whenever a new one is made. */
async function store(tx: Tx, session: WebSession): Promise<WebSession> {
  requireWrite(tx);
  if (session.stored) return session;
  await tx.delete(webSessions).where(or(lte(webSessions.expiresAt, session.createdAt), eq(webSessions.sessionHash, session.sessionHash)));
  const { stored: _, ...row } = session;
  await tx.insert(webSessions).values(row);
  return { ...session, stored: true };
}

/** The same session under a new secret and CSRF token (the old cookie stops working), with `patch` applied. */
async function renew(tx: Tx, session: WebSession, patch: Partial<WebSession>): Promise<{ session: WebSession; token: string }> {
  const stored = await store(tx, session);
  const token = newSecret("ws");
  const full = { ...patch, sessionHash: sha256(token), csrfToken: newSecret("csrf") };
  await tx.update(webSessions).set(full).where(eq(webSessions.sessionHash, stored.sessionHash));
  return { session: { ...stored, ...full }, token };
}

/** Where a sign-in comes from: the client it was obtained through (if any) and what that client may do. */
export interface Origin {
  parentClientId: string | null;
  scopes?: string;
}

/** A name for the browser's client, from its User-Agent, as /account and list_clients show it. */
export function browserName(req: Request): string {
  const ua = req.headers.get("user-agent") ?? "";
  const browser = /Edg\//.test(ua)
    ? "Edge"
    : /Firefox\//.test(ua)
      ? "Firefox"
      : /Chrom(e|ium)\//.test(ua)
        ? "Chrome"
        : /Safari\//.test(ua)
          ? "Safari"
          : "A browser";
  const os = /Android/.test(ua)
    ? "Android"
    : /iPhone|iPad/.test(ua)
      ? "iOS"
      : /Mac OS X/.test(ua)
        ? "macOS"
        : /Windows/.test(ua)
          ? "Windows"
          : /Linux/.test(ua)
            ? "Linux"
            : null;
  return `${browser}${os ? ` on ${os}` : ""} (web)`;
}

/**
 * Signs the browser in as an agent under a new client of kind web; renewing the secret rules out session fixation.
 * The scopes are never more than those of the client it was obtained through. A provider login proved earlier in this
 * session is forgotten: it vouched for the session's previous holder, not necessarily for this agent.
 */
export async function signIn(tx: Tx, req: Request, session: WebSession, agentId: string, access: Access, origin: Origin, now: Date) {
  requireWrite(tx);
  // Every way into a browser session (codes, the provider, settings links, join) comes through here. As the call read
  // it: a handle made in the same call (sign-up) is not disabled.
  if ((await agentById(snapshotOf(tx), agentId))?.disabledAt) throw new AppError("FORBIDDEN", DISABLED_MESSAGE);
  if (session.clientId) await endClient(tx, session.clientId, now);
  const scopes = narrowScopes(FULL_SCOPES, origin.scopes ?? FULL_SCOPES);
  const clientId = await createClient(tx, agentId, browserName(req), "web", now, { parent: origin.parentClientId });
  await tx
    .update(clients)
    .set({ lastUsedAt: iso(now) })
    .where(eq(clients.clientId, clientId));
  const expiresAt = later(now, access === "full" ? SIGNED_IN_MS : SETTINGS_MS);
  return renew(tx, session, { agentId, access, clientId, scopes, providerLogin: null, expiresAt });
}

/** How the signed-in browser's client came to be: when, and the client it was obtained through (null: none). */
export async function signInOf(tx: Tx, session: WebSession): Promise<{ at: string; parentClientId: string | null } | undefined> {
  if (!session.clientId) return undefined;
  return tx.select({ at: clients.createdAt, parentClientId: clients.parentClientId }).from(clients).where(eq(clients.clientId, session.clientId)).get();
}

/**
 * The client a sign-in factor (a password, a passkey, a phone) set in this browser is tied to: the browser's own
 * client when its sign-in descends from another client (a code an agent's key read, a settings link, a factor tied
 * already), so that revoking that client, or any it descends from, ends the factor (revokeClient); null when the
 * person proved the handle by themselves (sign-up, a factor tied to no client, the provider, a reset link).
 */
export async function factorOrigin(tx: Tx, session: WebSession): Promise<string | null> {
  const signIn = await signInOf(tx, session);
  return signIn?.parentClientId ? session.clientId : null;
}

/** Forgets who is signed in (its client ends), keeping a join or authorization in progress. */
export async function signOut(tx: Tx, session: WebSession, now: Date) {
  requireWrite(tx);
  if (session.clientId) await endClient(tx, session.clientId, now);
  return renew(tx, session, {
    agentId: null,
    access: null,
    clientId: null,
    scopes: null,
    oidcIdentity: null,
    providerLogin: null,
    expiresAt: later(now, ANONYMOUS_MS),
  });
}

export async function updateSession(
  tx: Tx,
  session: WebSession,
  patch: Partial<Omit<WebSession, "sessionHash" | "csrfToken" | "stored">>,
): Promise<WebSession> {
  const stored = await store(tx, session);
  await tx.update(webSessions).set(patch).where(eq(webSessions.sessionHash, stored.sessionHash));
  return { ...stored, ...patch };
}

export function csrfValid(session: WebSession, form: URLSearchParams): boolean {
  const sent = form.get("csrf");
  return sent !== null && constantTimeEqual(sent, session.csrfToken);
}

export const signedIn = (s: WebSession, access: Access = "full"): s is WebSession & { agentId: string; clientId: string } =>
  s.agentId !== null && s.clientId !== null && (s.access === "full" || s.access === access);

/** Whether the signed-in browser may change things: its client holds svc:write. */
export const mayWrite = (s: WebSession) => (s.scopes ?? "").split(" ").includes("svc:write");
