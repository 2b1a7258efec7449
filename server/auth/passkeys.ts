// Passkeys (WebAuthn) through @simplewebauthn/server: the relying party is the base URL's host, the expected origin
// its origin. A ceremony's challenge waits in the browser's web session (one at a time, for five minutes) and is used
// up by the answer, whatever it is. Checking an answer needs no database, so it runs outside any transaction
// (server/web/framework.ts slowForm): the passkey is read before, its new counter written after.
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import { and, eq } from "drizzle-orm";
import { guardChanged, type Tx } from "../../db/client.ts";
import { passkeys, type WebauthnChallenge } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { conflict } from "../errors.ts";

const CHALLENGE_MS = 5 * MINUTE;
type Purpose = WebauthnChallenge["purpose"];

const relyingParty = (base: string) => {
  const url = new URL(base);
  return { rpID: url.hostname, origin: url.origin };
};

/** Options for navigator.credentials.create, and the challenge to keep in the session. */
export async function registrationOptions(tx: Tx, base: string, now: Date, who: { handle: string; displayName: string; agentId?: string }, purpose: Purpose) {
  const mine = who.agentId ? await tx.select({ id: passkeys.credentialId }).from(passkeys).where(eq(passkeys.agentId, who.agentId)).all() : [];
  const options = await generateRegistrationOptions({
    rpName: "svc",
    rpID: relyingParty(base).rpID,
    userName: who.handle,
    userDisplayName: who.displayName,
    attestationType: "none",
    // The same authenticator twice for one handle would be a second row for nothing.
    excludeCredentials: mine.map((m) => ({ id: m.id })),
    // A discoverable credential lets the sign-in page ask for a passkey without a handle typed first.
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
  });
  const challenge: WebauthnChallenge = { challenge: options.challenge, purpose, handle: who.handle, expiresAt: later(now, CHALLENGE_MS) };
  return { options, challenge };
}

export async function authenticationOptions(base: string, now: Date) {
  const options = await generateAuthenticationOptions({ rpID: relyingParty(base).rpID, userVerification: "required" });
  const challenge: WebauthnChallenge = { challenge: options.challenge, purpose: "signin", expiresAt: later(now, CHALLENGE_MS) };
  return { options, challenge };
}

const usable = (c: WebauthnChallenge | null, purpose: Purpose, now: Date): c is WebauthnChallenge =>
  c !== null && c.purpose === purpose && c.expiresAt > iso(now);

function parse<T>(text: string): T | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && typeof v.id === "string" && v.response ? (v as T) : null;
  } catch {
    return null;
  }
}

export type NewPasskey = { id: string; publicKey: string; counter: number; transports: string[] | null };

/** The passkey the browser made, when its answer checks out against the session's challenge. */
export async function checkRegistration(
  base: string,
  now: Date,
  challenge: WebauthnChallenge | null,
  purpose: Purpose,
  answer: string,
): Promise<NewPasskey | null> {
  const response = parse<RegistrationResponseJSON>(answer);
  if (!response || !usable(challenge, purpose, now)) return null;
  const rp = relyingParty(base);
  try {
    const result = await verifyRegistrationResponse({
      response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.rpID,
      requireUserVerification: true,
    });
    if (!result.verified) return null;
    const c = result.registrationInfo.credential;
    return { id: c.id, publicKey: Buffer.from(c.publicKey).toString("base64url"), counter: c.counter, transports: c.transports ?? null };
  } catch {
    return null;
  }
}

/**
 * Stores the agent's new passkey; CONFLICT when its credential is registered here already (one credential, one
 * handle). `setThrough`: the client the passkey is tied to (server/web/session.ts factorOrigin), null for none.
 */
export async function savePasskey(tx: Tx, agentId: string, key: NewPasskey, name: string, setThrough: string | null, now: Date): Promise<void> {
  if (await tx.select({ id: passkeys.credentialId }).from(passkeys).where(eq(passkeys.credentialId, key.id)).get()) {
    throw conflict("This passkey is registered here already. Sign in with it, or make a new passkey.");
  }
  await tx.insert(passkeys).values({
    credentialId: key.id,
    agentId,
    publicKey: key.publicKey,
    counter: key.counter,
    transports: key.transports,
    name,
    createdAt: iso(now),
    lastUsedAt: null,
    setThroughClientId: setThrough,
  });
}

export type StoredPasskey = typeof passkeys.$inferSelect;

/** The stored passkey a sign-in answer names, or null; read before its signature is checked (checkAssertion). */
export async function passkeyAnswering(tx: Tx, answer: string): Promise<StoredPasskey | null> {
  const response = parse<AuthenticationResponseJSON>(answer);
  if (!response) return null;
  return (await tx.select().from(passkeys).where(eq(passkeys.credentialId, response.id)).get()) ?? null;
}

/**
 * The passkey's new signature counter when the answer is its valid signature over the session's challenge, else null
 * (wrong signature, stale challenge). Needs no database: run outside any transaction, then recordPasskeyUse.
 */
export async function checkAssertion(base: string, now: Date, challenge: WebauthnChallenge | null, answer: string, key: StoredPasskey): Promise<number | null> {
  const response = parse<AuthenticationResponseJSON>(answer);
  if (!response || response.id !== key.credentialId || !usable(challenge, "signin", now)) return null;
  const rp = relyingParty(base);
  try {
    const result = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.rpID,
      requireUserVerification: true,
      credential: { id: key.credentialId, publicKey: Buffer.from(key.publicKey, "base64url"), counter: key.counter, transports: key.transports ?? undefined },
    });
    return result.verified ? result.authenticationInfo.newCounter : null;
  } catch {
    return null;
  }
}

/**
 * Records a sign-in checked by checkAssertion: the new counter, unless the passkey was used (its counter moved) or
 * removed since it was read, when the sign-in does not count (false).
 */
export async function recordPasskeyUse(tx: Tx, key: StoredPasskey, newCounter: number, now: Date): Promise<boolean> {
  const unmoved = and(eq(passkeys.credentialId, key.credentialId), eq(passkeys.counter, key.counter));
  if (!(await tx.select({ id: passkeys.credentialId }).from(passkeys).where(unmoved).get())) return false;
  // Used at the same moment elsewhere: this runs again, and finds the counter moved.
  await tx
    .update(passkeys)
    .set({ counter: newCounter, lastUsedAt: iso(now) })
    .where(unmoved);
  await guardChanged(tx, "passkey counter");
  return true;
}

export async function passkeysOf(tx: Tx, agentId: string) {
  return tx
    .select({ name: passkeys.name, createdAt: passkeys.createdAt, lastUsedAt: passkeys.lastUsedAt, setThrough: passkeys.setThroughClientId })
    .from(passkeys)
    .where(eq(passkeys.agentId, agentId))
    .all();
}
