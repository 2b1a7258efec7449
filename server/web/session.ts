// Browser sessions of the pages: an HttpOnly SameSite cookie holding a secret, the row keyed by its hash,
// a CSRF token per session, and a fresh secret whenever the human signs in (no session fixation).
import { eq, lte } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { webSessions } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { constantTimeEqual, newSecret, sha256 } from "../auth/secrets.ts";

export const SESSION_COOKIE = "svc_session";
const ANONYMOUS_MS = 60 * MINUTE;
const SIGNED_IN_MS = 12 * 60 * MINUTE;
// A settings link opens a short session that reaches the settings page only.
const SETTINGS_MS = 30 * MINUTE;

export type WebSession = typeof webSessions.$inferSelect;
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

export async function loadSession(tx: Tx, req: Request, now: Date): Promise<WebSession | null> {
  const token = readCookie(req, SESSION_COOKIE);
  if (!token || token.length > 200) return null;
  const row = await tx
    .select()
    .from(webSessions)
    .where(eq(webSessions.sessionHash, sha256(token)))
    .get();
  return row && row.expiresAt > iso(now) ? row : null;
}

/** A new anonymous session; returns it and the cookie that carries it. */
export async function createSession(tx: Tx, now: Date): Promise<{ session: WebSession; token: string }> {
  // Expired rows go whenever a new one is made, so anonymous visits never pile up.
  await tx.delete(webSessions).where(lte(webSessions.expiresAt, iso(now)));
  const token = newSecret("ws");
  const session: WebSession = {
    sessionHash: sha256(token),
    csrfToken: newSecret("csrf"),
    agentId: null,
    access: null,
    joinSessionId: null,
    oauthRequest: null,
    oidcFlow: null,
    oidcIdentity: null,
    providerLogin: null,
    createdAt: iso(now),
    expiresAt: later(now, ANONYMOUS_MS),
  };
  await tx.insert(webSessions).values(session);
  return { session, token };
}

/** The same session under a new secret and CSRF token (the old cookie stops working), with `patch` applied. */
async function renew(tx: Tx, session: WebSession, patch: Partial<WebSession>): Promise<{ session: WebSession; token: string }> {
  const token = newSecret("ws");
  const full = { ...patch, sessionHash: sha256(token), csrfToken: newSecret("csrf") };
  await tx.update(webSessions).set(full).where(eq(webSessions.sessionHash, session.sessionHash));
  return { session: { ...session, ...full }, token };
}

/**
 * Signs the browser in as an agent; renewing the secret rules out session fixation. A provider login proved earlier
 * in this session is forgotten: it vouched for the session's previous holder, not necessarily for this agent.
 */
export function signIn(tx: Tx, session: WebSession, agentId: string, access: Access, now: Date) {
  return renew(tx, session, { agentId, access, providerLogin: null, expiresAt: later(now, access === "full" ? SIGNED_IN_MS : SETTINGS_MS) });
}

/** Forgets who is signed in, keeping a join or authorization in progress. */
export function signOut(tx: Tx, session: WebSession, now: Date) {
  return renew(tx, session, { agentId: null, access: null, oidcIdentity: null, providerLogin: null, expiresAt: later(now, ANONYMOUS_MS) });
}

export async function updateSession(tx: Tx, session: WebSession, patch: Partial<Omit<WebSession, "sessionHash" | "csrfToken">>): Promise<WebSession> {
  await tx.update(webSessions).set(patch).where(eq(webSessions.sessionHash, session.sessionHash));
  return { ...session, ...patch };
}

export function csrfValid(session: WebSession, form: URLSearchParams): boolean {
  const sent = form.get("csrf");
  return sent !== null && constantTimeEqual(sent, session.csrfToken);
}

export const signedIn = (s: WebSession, access: Access = "full"): s is WebSession & { agentId: string } =>
  s.agentId !== null && (s.access === "full" || s.access === access);
