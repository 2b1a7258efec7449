// The e-mails themselves: notifications composed from waiting events (one e-mail per person for everything of the
// last few minutes, or of the day for the kinds they get daily), and the e-mails that carry a link (confirm an
// address, sign in, reset a password, take a place in a group). Each is written to the outbox (outbox.ts) in the
// caller's transaction; the job runner sends it.
import { createHmac } from "node:crypto";
import { and, asc, eq, inArray, lte, min } from "drizzle-orm";
import type { Db, Tx } from "../../../db/client.ts";
import { emailEvents, groups, inboxItems } from "../../../db/schema/index.ts";
import { DAY, MINUTE, iso } from "../../clock.ts";
import { EMAIL_KINDS, type EmailKind, isEmailKind } from "../../contract/email.ts";
import { constantTimeEqual } from "../../auth/secrets.ts";
import { agentById, refsByIds } from "../agents.ts";
import { emailOf, prefsOf } from "./addresses.ts";
import { enqueue, roomFor } from "./outbox.ts";
import { counted, type Entry, entryOf, person, render, say, withLink, words } from "./wording.ts";

/** Immediate notifications wait this long after the first of them, so that what happens together comes in one e-mail. */
export const COALESCE_MS = 2 * MINUTE;
/** The daily digest goes once its oldest news is a day old: at most one a day, nothing in it more than a day late. */
export const DIGEST_MS = DAY;
/** Events put in one e-mail at most; the rest go in the next. */
const PER_MAIL = 100;

export interface EmailContext {
  baseUrl: string;
  /** Signs the unsubscribe links (the server's form key). */
  key: string;
}

/**
 * Composes every notification e-mail that is due now; returns how many were written. Each person's in a write call of
 * its own: a write call reads nothing it wrote (db/connections.ts), and one person's e-mail reads the events and the
 * outbox the person before wrote.
 */
export async function composeDue(db: Db, now: Date, ctx: EmailContext): Promise<number> {
  let written = 0;
  for (const daily of [false, true]) {
    const cutoff = iso(new Date(now.getTime() - (daily ? DIGEST_MS : COALESCE_MS)));
    const due = await db.read((tx) =>
      tx
        .select({ agentId: emailEvents.agentId })
        .from(emailEvents)
        .where(eq(emailEvents.daily, daily))
        .groupBy(emailEvents.agentId)
        .having(lte(min(emailEvents.createdAt), cutoff))
        .limit(200),
    );
    for (const { agentId } of due) written += await db.tx((tx) => composeFor(tx, now, ctx, agentId, daily));
  }
  return written;
}

async function composeFor(tx: Tx, now: Date, ctx: EmailContext, agentId: string, daily: boolean): Promise<number> {
  const mine = and(eq(emailEvents.agentId, agentId), eq(emailEvents.daily, daily));
  const address = await emailOf(tx, agentId);
  const me = await agentById(tx, agentId);
  if (!address?.confirmedAt || !address.address || !me || me.retiredAt || me.disabledAt) {
    await tx.delete(emailEvents).where(mine);
    return 0;
  }
  // Past the address's limit the events wait, and more join them: they come together once it frees.
  if (!(await roomFor(tx, now, address.address))) return 0;
  const events = await tx.select().from(emailEvents).where(mine).orderBy(asc(emailEvents.eventId)).limit(PER_MAIL);
  const items = await tx
    .select()
    .from(inboxItems)
    .where(
      inArray(
        inboxItems.itemId,
        events.map((e) => e.itemId),
      ),
    );
  const byId = new Map(items.map((i) => [i.itemId, i]));
  const prefs = prefsOf(address);
  const senders = await refsByIds(tx, [...new Set(items.flatMap((i) => (i.fromAgentId ? [i.fromAgentId] : [])))]);
  const groupIds = [...new Set(items.flatMap((i) => (i.refs.group_id ? [i.refs.group_id] : [])))];
  const names = new Map(
    groupIds.length
      ? (await tx.select({ id: groups.groupId, name: groups.name }).from(groups).where(inArray(groups.groupId, groupIds))).map((g) => [g.id, g.name])
      : [],
  );
  const entries: Entry[] = [];
  for (const e of events) {
    const i = byId.get(e.itemId);
    // Gone (expired), withdrawn, or already answered (the person acted on it meanwhile): nothing to tell.
    if (!i || i.dismissed || (i.requiresAction && i.resolved) || !isEmailKind(e.kind) || prefs[e.kind] === "off") continue;
    const from = i.fromAgentId ? senders.get(i.fromAgentId) : undefined;
    const entry = entryOf(
      e.kind,
      {
        type: i.type,
        payload: i.payload,
        note: i.note ?? null,
        refs: i.refs,
        from: from ? { handle: from.handle, displayName: from.display_name } : null,
        groupName: i.refs.group_id ? (names.get(i.refs.group_id) ?? null) : null,
      },
      ctx.baseUrl,
    );
    if (entry) entries.push(entry);
  }
  await tx.delete(emailEvents).where(
    inArray(
      emailEvents.eventId,
      events.map((e) => e.eventId),
    ),
  );
  if (!entries.length) return 0;
  const kinds = [...new Set(entries.map((e) => e.kind))];
  const unsubscribeUrl = `${ctx.baseUrl}/settings/email/unsubscribe/${unsubscribeToken(ctx.key, agentId, kinds)}`;
  const summary = counted(entries);
  const body = render({
    name: me.displayName,
    paragraphs: [daily ? say`Here is what happened on svc in the last day: ${summary}.` : say`Here is what just happened on svc: ${summary}.`],
    entries,
    footer: [
      withLink(
        say`You get these e-mails because you confirmed this address on svc (${ctx.baseUrl}) as @${me.handle}. Choose what you get, and how often, on your settings page:`,
        `${ctx.baseUrl}/settings#email`,
      ),
      withLink(say`To stop e-mails about ${kinds.map((k) => EMAIL_KINDS[k].label.toLowerCase()).join("; ")}:`, unsubscribeUrl),
    ],
  });
  await enqueue(tx, now, {
    agentId,
    to: address.address,
    purpose: daily ? "digest" : "notification",
    subject: daily ? `Your daily svc digest: ${summary}` : `New on svc: ${summary}`,
    text: body.text,
    html: body.html,
    unsubscribeUrl,
  });
  return 1;
}

const mac = (key: string, payload: string) => createHmac("sha256", key).update(`email-unsubscribe|${payload}`).digest("base64url");

/**
 * The token of an unsubscribe link: whose it is and which kinds it stops, signed with the server's key. It never
 * expires (RFC 8058 links are used late) and can do nothing else: turn those kinds off.
 */
export function unsubscribeToken(key: string, agentId: string, kinds: EmailKind[]): string {
  const payload = Buffer.from(`${agentId}|${kinds.join(",")}`).toString("base64url");
  return `${payload}.${mac(key, payload)}`;
}

export function readUnsubscribeToken(key: string, token: string): { agentId: string; kinds: EmailKind[] } | null {
  const [payload, signature, ...rest] = token.split(".");
  if (!payload || !signature || rest.length || token.length > 600 || !constantTimeEqual(signature, mac(key, payload))) return null;
  const [agentId, list] = Buffer.from(payload, "base64url").toString().split("|");
  const kinds = (list ?? "").split(",").filter(isEmailKind);
  return agentId && kinds.length ? { agentId, kinds } : null;
}

const footerFor = (base: string) =>
  say`This e-mail was sent by svc at ${base} because someone asked for it there. If it was not you, ignore it: nothing happens.`;

/** The e-mail with a confirmation link for an address just added. */
export async function mailConfirmation(tx: Tx, now: Date, ctx: EmailContext, agentId: string, address: string, token: string): Promise<void> {
  const me = (await agentById(tx, agentId))!;
  const url = `${ctx.baseUrl}/settings/email/confirm/${token}`;
  const body = render({
    name: me.displayName,
    paragraphs: [
      say`You added this address to your svc account @${me.handle}. Confirm it, and svc can send you a link to sign in, a link to reset your password, and the notifications you choose.`,
      say`The link works for a day, once.`,
    ],
    action: { label: "Confirm my address", url },
    footer: [footerFor(ctx.baseUrl)],
  });
  await enqueue(tx, now, { agentId, to: address, purpose: "confirm", subject: "Confirm your e-mail address for svc", text: body.text, html: body.html });
}

/** The e-mail with one link per handle, each signing a browser in once (reset: to set a new password). */
export async function mailSigninLinks(
  tx: Tx,
  now: Date,
  ctx: EmailContext,
  to: string,
  purpose: "signin" | "reset",
  links: { agentId: string; handle: string; displayName: string; url: string }[],
): Promise<void> {
  const first = links[0]!;
  const reset = purpose === "reset";
  const body = render({
    name: links.length === 1 ? first.displayName : null,
    paragraphs: [
      reset
        ? say`Someone asked to reset the password of your svc account. The link below signs you in once; then set a new password (or add a passkey).`
        : say`Someone asked for a link to sign in to svc with this address. The link below signs you in once.`,
      say`It works for 30 minutes. If you did not ask for it, ignore this e-mail: nothing changes.`,
      ...(links.length > 1 ? links.slice(1).map((l) => withLink(say`As @${l.handle}:`, l.url)) : []),
    ],
    action: { label: links.length > 1 ? `As @${first.handle}` : reset ? "Reset my password" : "Sign me in", url: first.url },
    footer: [footerFor(ctx.baseUrl)],
  });
  await enqueue(tx, now, {
    agentId: links.length === 1 ? first.agentId : null,
    to,
    purpose,
    subject: reset ? "Reset your svc password" : "Your svc sign-in link",
    text: body.text,
    html: body.html,
  });
}

/** The e-mail that carries a placeholder's claim link to the friend, from the member who sends it. */
export async function mailClaimLink(
  tx: Tx,
  now: Date,
  ctx: EmailContext,
  c: { senderId: string; to: string; name: string; groupName: string; url: string; expiresAt: string },
): Promise<void> {
  const sender = (await agentById(tx, c.senderId))!;
  const who = person({ handle: sender.handle, displayName: sender.displayName });
  const body = render({
    name: null,
    paragraphs: [
      say`${who} added you as ${words(c.name)} to the group ${words(c.groupName)} on svc, where friends split costs, and sends you this link to take your place: with an account of your own, you see what you were put down for and settle up.`,
      say`The link works until ${c.expiresAt.slice(0, 10)}, once. Words in quotes were written by ${who}, not by svc.`,
    ],
    action: { label: "Take my place in the group", url: c.url },
    footer: [say`This e-mail was sent by svc at ${ctx.baseUrl} because ${who} typed this address there. If you do not know them, ignore it.`],
  });
  await enqueue(tx, now, {
    agentId: null,
    to: c.to,
    purpose: "claim",
    subject: "Your place in a group on svc",
    text: body.text,
    html: body.html,
  });
}
