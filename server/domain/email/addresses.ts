// A person's e-mail address: added on the settings page, confirmed by a link sent to it (stored hashed, a day, single
// use), then used to sign in by a link, to reset the password, and for notifications of the kinds the person chose.
// One address per handle; a new one waits for its link while the old one keeps working. Like a phone, an address
// added in a browser signed in through a client is tied to that client: disconnecting it removes the address
// (server/auth/credentials.ts revokeClient).
import { and, eq, gt, isNotNull, isNull, sql } from "drizzle-orm";
import type { Tx } from "../../../db/client.ts";
import { agents, emailAddresses, emailEvents } from "../../../db/schema/index.ts";
import { newSecret, sha256 } from "../../auth/secrets.ts";
import { DAY, HOUR, iso, later } from "../../clock.ts";
import { EMAIL_DELIVERIES, EMAIL_KINDS, type EmailDelivery, type EmailKind, emailKey, initialPrefs } from "../../contract/email.ts";
import { AppError, conflict } from "../../errors.ts";
import { takeAttempt } from "../attempts.ts";
import { dropWaiting, roomFor } from "./outbox.ts";

/** How long a confirmation link works. */
export const CONFIRM_TTL_MS = DAY;
/** Confirmation e-mails one handle may have sent in an hour: whoever holds a handle cannot flood someone's mailbox. */
export const CONFIRMS_PER_HANDLE = { limit: 5, windowMs: HOUR };
const TOKEN_PATTERN = /^eml_[A-Za-z0-9_-]{43}$/;

export type EmailAddressRow = typeof emailAddresses.$inferSelect;

export async function emailOf(tx: Tx, agentId: string): Promise<EmailAddressRow | undefined> {
  return tx.select().from(emailAddresses).where(eq(emailAddresses.agentId, agentId)).get();
}

/** The confirmed address of an agent, or null. */
export async function confirmedEmail(tx: Tx, agentId: string): Promise<string | null> {
  const row = await emailOf(tx, agentId);
  return row?.confirmedAt ? row.address : null;
}

/**
 * Starts proving `address` for the agent: stored as pending with a new link, whose token is returned for the e-mail
 * the caller writes. RATE_LIMITED past the handle's confirmation e-mails an hour, or when the address has had as
 * many e-mails as it may; CONFLICT when it is the agent's confirmed address already. `setThrough`: the client the
 * browser adding it was signed in through (server/web/session.ts factorOrigin).
 */
export async function startEmailProof(tx: Tx, now: Date, agentId: string, address: string, setThrough: string | null): Promise<{ token: string }> {
  const row = await emailOf(tx, agentId);
  if (row?.confirmedAt && row.addressKey === emailKey(address)) throw conflict("That is your confirmed address already.");
  await takeAttempt(tx, now, `email:confirm:handle:${agentId}`, CONFIRMS_PER_HANDLE).catch((err) => {
    if (err instanceof AppError && err.code === "RATE_LIMITED")
      throw new AppError(
        "RATE_LIMITED",
        "Too many confirmation e-mails were sent for your account in the last hour; wait and try again.",
        err.details,
        err.retryAfter,
      );
    throw err;
  });
  if (!(await roomFor(tx, now, address)))
    throw new AppError("RATE_LIMITED", "Too many e-mails went to this address recently; wait an hour and try again.", undefined, 3600);
  const token = newSecret("eml");
  const pending = { pendingAddress: address, pendingHash: sha256(token), pendingExpiresAt: later(now, CONFIRM_TTL_MS), pendingSetThrough: setThrough };
  await tx
    .insert(emailAddresses)
    .values({ agentId, prefs: initialPrefs(), createdAt: iso(now), ...pending })
    .onConflictDoUpdate({ target: emailAddresses.agentId, set: pending });
  return { token };
}

/** Forgets the address waiting for its link (the person typed a wrong one). */
export async function cancelEmailProof(tx: Tx, agentId: string): Promise<void> {
  await tx
    .update(emailAddresses)
    .set({ pendingAddress: null, pendingHash: null, pendingExpiresAt: null, pendingSetThrough: null })
    .where(eq(emailAddresses.agentId, agentId));
  // A row that never had a confirmed address is nothing without its pending one.
  await tx.delete(emailAddresses).where(and(eq(emailAddresses.agentId, agentId), isNull(emailAddresses.address)));
}

const livePending = (token: string, now: Date) => and(eq(emailAddresses.pendingHash, sha256(token)), gt(emailAddresses.pendingExpiresAt, iso(now)));

/** The address a confirmation link would confirm, and whose it is; null when the link is unknown, used or expired. */
export async function pendingByToken(tx: Tx, now: Date, token: string): Promise<{ agentId: string; address: string } | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const row = await tx.select().from(emailAddresses).where(livePending(token, now)).get();
  return row?.pendingAddress ? { agentId: row.agentId, address: row.pendingAddress } : null;
}

/** Uses a confirmation link up: its address becomes the agent's confirmed one. Null when it is unknown, used or expired. */
export async function confirmEmail(tx: Tx, now: Date, token: string): Promise<{ agentId: string; address: string } | null> {
  const pending = await pendingByToken(tx, now, token);
  if (!pending) return null;
  await tx
    .update(emailAddresses)
    .set({
      address: pending.address,
      addressKey: emailKey(pending.address),
      confirmedAt: iso(now),
      setThroughClientId: sql`${emailAddresses.pendingSetThrough}`,
      pendingAddress: null,
      pendingHash: null,
      pendingExpiresAt: null,
      pendingSetThrough: null,
    })
    .where(and(eq(emailAddresses.agentId, pending.agentId), livePending(token, now)));
  return pending;
}

/** Removes the agent's address: nothing more is sent to it, notifications waiting included. */
export async function removeEmail(tx: Tx, agentId: string): Promise<void> {
  await tx.delete(emailAddresses).where(eq(emailAddresses.agentId, agentId));
  await tx.delete(emailEvents).where(eq(emailEvents.agentId, agentId));
  await dropWaiting(tx, agentId);
}

/** What the agent chose for each kind, every kind present (one added later starts as EMAIL_KINDS says). */
export const prefsOf = (row: Pick<EmailAddressRow, "prefs">): Record<EmailKind, EmailDelivery> => ({ ...initialPrefs(), ...row.prefs });

/** Sets how the agent hears of each kind given; events already waiting of a kind turned off are dropped. */
export async function setPrefs(tx: Tx, agentId: string, chosen: Partial<Record<EmailKind, EmailDelivery>>): Promise<void> {
  const row = await emailOf(tx, agentId);
  if (!row) return;
  const prefs = { ...prefsOf(row) };
  for (const [kind, how] of Object.entries(chosen)) {
    if (Object.hasOwn(EMAIL_KINDS, kind) && (EMAIL_DELIVERIES as readonly string[]).includes(how)) prefs[kind as EmailKind] = how;
  }
  await tx.update(emailAddresses).set({ prefs }).where(eq(emailAddresses.agentId, agentId));
  const off = Object.entries(prefs).flatMap(([kind, how]) => (how === "off" ? [kind] : []));
  for (const kind of off) await tx.delete(emailEvents).where(and(eq(emailEvents.agentId, agentId), eq(emailEvents.kind, kind)));
}

/**
 * The live handles (neither retired nor disabled) whose confirmed address is `address`, for a sign-in link: one
 * person may have confirmed one address on two handles.
 */
export async function handlesWithEmail(tx: Tx, address: string) {
  return tx
    .select({
      agentId: agents.agentId,
      handle: agents.handle,
      displayName: agents.displayName,
      address: emailAddresses.address,
      setThrough: emailAddresses.setThroughClientId,
    })
    .from(emailAddresses)
    .innerJoin(agents, eq(agents.agentId, emailAddresses.agentId))
    .where(and(eq(emailAddresses.addressKey, emailKey(address)), isNotNull(emailAddresses.confirmedAt), isNull(agents.retiredAt), isNull(agents.disabledAt)))
    .limit(10);
}

/** Joining two handles: the retired one's address goes to the kept one, unless it has a confirmed one of its own. */
export async function moveEmail(tx: Tx, from: string, to: string): Promise<void> {
  const [mine, theirs] = [await emailOf(tx, from), await emailOf(tx, to)];
  if (mine?.confirmedAt && !theirs?.confirmedAt) {
    await tx.delete(emailAddresses).where(eq(emailAddresses.agentId, to));
    await tx.update(emailAddresses).set({ agentId: to }).where(eq(emailAddresses.agentId, from));
  }
  await removeEmail(tx, from);
}
