// Per-agent quotas on what an agent stores, so one agent's flood cannot fill the disk for everyone
// (docs/limits.md, "Quotas per agent"). A count (groups, open plans) refuses with CONFLICT; a budget per rolling
// day (envelope bytes, expenses per group) with RATE_LIMITED and retry_after: when enough of it frees.
// Each check runs in the write's transaction, before it writes, so a refused write stores nothing; what it counted is
// guarded in the write's batch, so writes that read at once (or on a replica's file behind the primary) cannot pass it
// together.
import { and, eq, gt, isNull, ne, sql } from "drizzle-orm";
import { batchOf, guard, prepared, snapshotOf, type Tx } from "../../db/client.ts";
import { envelopes, expenseAttachments, expenses, federationEnvelopeBytes, federationOutbox, groupMembers, plans } from "../../db/schema/index.ts";
import { DAY, iso } from "../clock.ts";
import { DEFAULTS, type Quotas } from "../config.ts";
import type { DomainContext } from "../contract/principal.ts";
import { AppError, conflict } from "../errors.ts";

/** The server's quotas as a tool's context carries them; a context built without them (a page, a job) has the defaults. */
export const quotasOf = (ctx: DomainContext): Quotas => ctx.config?.quotas ?? DEFAULTS.quotas;

const since = (now: Date) => iso(new Date(now.getTime() - DAY));
// Seconds until a row written at `at` leaves the rolling day.
const freedIn = (at: string, now: Date) => Math.max(1, Math.ceil((Date.parse(at) + DAY - now.getTime()) / 1000));

const overBudget = (message: string, details: Record<string, unknown>, retryAfter: number) =>
  new AppError("RATE_LIMITED", message, details, retryAfter, `Wait retry_after seconds (${retryAfter}), then retry with the same idempotency key.`);

/** Groups and direct ledgers: refuses the agent a new membership at the quota. */
export async function requireRoomForGroup(tx: Tx, agentId: string, max: number): Promise<void> {
  const mine = and(eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt));
  const row = await tx.select({ n: sql<number>`count(*)` }).from(groupMembers).where(mine).get();
  if (row!.n < max) return guard(tx, "group quota", sql`(SELECT count(*) FROM ${groupMembers} WHERE ${mine}) < ${max}`);
  throw conflict(
    `You are already in ${row!.n} groups and direct ledgers, the most one handle may be in (the limit is ${max}). Leave or archive one you no longer use first.`,
    {
      limit: max,
      groups: row!.n,
    },
  );
}

/** Open plans (not cancelled, not yet over) the agent organises: refuses a new one at the quota. */
export async function requireRoomForPlan(ctx: DomainContext): Promise<void> {
  const max = quotasOf(ctx).openPlans;
  const open = and(eq(plans.organiserId, ctx.actor.agentId), ne(plans.state, "cancelled"), gt(plans.endsAt, iso(ctx.now)));
  const row = await ctx.tx.select({ n: sql<number>`count(*)` }).from(plans).where(open).get();
  if (row!.n < max) return guard(ctx.tx, "plan quota", sql`(SELECT count(*) FROM ${plans} WHERE ${open}) < ${max}`);
  throw conflict(`You already organise ${row!.n} open plans, the most one handle may (the limit is ${max}). Cancel one, or wait until one is over.`, {
    limit: max,
    open_plans: row!.n,
  });
}

const storedEnvelopeBytes = sql<number>`length(CAST(${envelopes.subject} AS BLOB)) + length(CAST(${envelopes.bodyMd} AS BLOB))`;

/** What an envelope counts for in the envelope quota: the UTF-8 bytes of its subject and body. */
export const envelopeBytes = (e: { subject: string; body_md: string }) => Buffer.byteLength(e.subject) + Buffer.byteLength(e.body_md);

/**
 * Bytes of files (receipts) the agent uploaded and that are still stored, wherever they are: refuses a file of
 * `bytes` that would take them past the quota; deleting one (delete_attachment) frees its bytes.
 */
export async function requireRoomForAttachment(ctx: DomainContext, bytes: number): Promise<void> {
  const max = quotasOf(ctx).attachmentBytes;
  const stored = sql<number>`coalesce(sum(${expenseAttachments.sizeBytes}), 0)`;
  const mine = eq(expenseAttachments.uploadedBy, ctx.actor.agentId);
  const used = Number((await ctx.tx.select({ n: stored }).from(expenseAttachments).where(mine).get())!.n);
  if (used + bytes <= max) return guard(ctx.tx, "file quota", sql`(SELECT ${stored} FROM ${expenseAttachments} WHERE ${mine}) + ${bytes} <= ${max}`);
  throw conflict(
    `Your files take ${used} bytes; with this one (${bytes} bytes) they would pass the ${max} bytes of files one handle may keep. Delete files you no longer need with delete_attachment first.`,
    { limit_bytes: max, used_bytes: used, attachment_bytes: bytes },
  );
}

/** Refuses an envelope of `bytes` (subject and body, UTF-8) that would take the sender past its bytes for the rolling day. */
export async function requireEnvelopeBudget(ctx: DomainContext, bytes: number): Promise<void> {
  const { tx, now, actor } = ctx;
  const max = quotasOf(ctx).envelopeBytesPerDay;
  const mine = and(eq(envelopes.senderId, actor.agentId), gt(envelopes.createdAt, since(now)));
  const sent = sql<number>`coalesce(sum(${storedEnvelopeBytes}), 0)`;
  const used = Number((await tx.select({ n: sent }).from(envelopes).where(mine).get())!.n);
  if (used + bytes <= max) return guard(tx, "envelope budget", sql`(SELECT ${sent} FROM ${envelopes} WHERE ${mine}) + ${bytes} <= ${max}`);
  const details = { limit_bytes: max, used_bytes: used, envelope_bytes: bytes };
  if (bytes > max) throw conflict(`This envelope is ${bytes} bytes, more than the ${max} bytes a handle may send in a day.`, details);
  // The first moment enough of the day's envelopes have aged out: the oldest whose running total covers the excess.
  const need = used + bytes - max;
  const running = tx
    .select({ at: envelopes.createdAt, run: sql<number>`sum(${storedEnvelopeBytes}) OVER (ORDER BY ${envelopes.createdAt}, ${envelopes.seq})`.as("run") })
    .from(envelopes)
    .where(mine)
    .as("running");
  const freed = await tx.select({ at: running.at }).from(running).where(sql`${running.run} >= ${need}`).orderBy(sql`${running.run}`).limit(1).get();
  throw overBudget(
    `You have sent ${used} bytes of envelopes in the last 24 hours; this one (${bytes} bytes) would pass the limit of ${max} bytes a day.`,
    details,
    freedIn(freed!.at, now),
  );
}

// Built once: it runs before every expense.
const expensesAddedSince = prepared((tx) =>
  tx
    .select({ n: sql<number>`count(*)` })
    .from(expenses)
    .where(
      and(eq(expenses.createdBy, sql.placeholder("agent")), eq(expenses.groupId, sql.placeholder("group")), gt(expenses.createdAt, sql.placeholder("since"))),
    )
    .prepare(),
);

/** How many expenses the agent added to the group in the rolling day. */
export async function expensesAddedToday({ tx, now, actor }: DomainContext, groupId: string): Promise<number> {
  return Number((await expensesAddedSince(tx).get({ agent: actor.agentId, group: groupId, since: since(now) }))!.n);
}

/** Refuses the agent's next expense in a group when it already added (n) the quota's number there in the rolling day. */
export async function requireExpenseBudget(ctx: DomainContext, groupId: string, n: number): Promise<void> {
  const { tx, now, actor } = ctx;
  const max = quotasOf(ctx).expensesPerGroupPerDay;
  const mine = and(eq(expenses.createdBy, actor.agentId), eq(expenses.groupId, groupId), gt(expenses.createdAt, since(now)));
  if (n < max) return guard(tx, "expense budget", sql`(SELECT count(*) FROM ${expenses} WHERE ${mine}) < ${max}`);
  // Room for one more once the (n - max + 1)th oldest of them leaves the day.
  const oldest = await tx
    .select({ at: expenses.createdAt })
    .from(expenses)
    .where(mine)
    .orderBy(expenses.createdAt)
    .limit(1)
    .offset(n - max)
    .get();
  throw overBudget(
    `You have added ${n} expenses to this group in the last 24 hours, the most one handle may add to one group in a day (the limit is ${max}).`,
    { limit: max, added: n },
    freedIn(oldest!.at, now),
  );
}

/**
 * An envelope of `bytes` from an agent of another server, by its address: counted, and true, while what that address
 * sent here in the rolling day stays within the operator's envelope quota (`max`); false, nothing counted, past it.
 * Every envelope its server sent is counted, taken or dropped (no consent, a block): a refusal depends only on what
 * the sender sent, so it tells its server nothing of who blocked or declined it.
 */
export async function takeRemoteEnvelopeBudget(tx: Tx, now: Date, address: string, bytes: number, max: number): Promise<boolean> {
  const from = address.toLowerCase();
  const used = Number(
    (await tx
      .select({ n: sql<number>`coalesce(sum(${federationEnvelopeBytes.bytes}), 0)` })
      .from(federationEnvelopeBytes)
      .where(and(eq(federationEnvelopeBytes.address, from), gt(federationEnvelopeBytes.receivedAt, since(now))))
      .get())!.n,
  );
  if (used + bytes > max) return false;
  await tx.insert(federationEnvelopeBytes).values({ address: from, bytes, receivedAt: iso(now) });
  return true;
}

/**
 * Refuses an event for another server `host` when the agent already has undelivered events for the quota's number of
 * other servers and `host` is not one of them: one agent cannot fill the outbox with servers that never answer.
 */
// The hosts a write call has sent to so far, by its batch (requireRoomForHost).
const hostsInCall = new WeakMap<object, Set<string>>();

export async function requireRoomForHost(ctx: DomainContext, host: string): Promise<void> {
  const { tx, actor } = ctx;
  const max = quotasOf(ctx).pendingHosts;
  // As the call read them, and the hosts it has already sent to (one call may send to several).
  const batch = batchOf(tx);
  const sentNow = batch ? (hostsInCall.get(batch) ?? hostsInCall.set(batch, new Set()).get(batch)!) : new Set<string>();
  const read = await snapshotOf(tx)
    .selectDistinct({ host: federationOutbox.destination })
    .from(federationOutbox)
    .where(and(eq(federationOutbox.senderId, actor.agentId), isNull(federationOutbox.sentAt)));
  const pending = [...new Set([...read.map((p) => p.host), ...sentNow])].map((h) => ({ host: h }));
  sentNow.add(host);
  if (pending.length < max || pending.some((p) => p.host === host)) return;
  sentNow.delete(host);
  throw conflict(
    `What you sent to ${pending.length} other servers is still waiting to be delivered, the most one handle may have waiting (the limit is ${max}). ` +
      "Wait until some of it is delivered (or given up after 72 hours), then try again.",
    { limit: max, pending_hosts: pending.length },
  );
}
