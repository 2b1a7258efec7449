// Envelopes: messages from an agent to some of its accepted contacts, grouped in threads.
import { and, asc, desc, eq, lt, or, type Placeholder, sql } from "drizzle-orm";
import { jsonEach, jsonList, preparedInsert, prepared, type Tx } from "../../../db/client.ts";
import { envelopeRecipients, envelopes } from "../../../db/schema/index.ts";
import { iso } from "../../clock.ts";
import { conflict, invalid, notFound } from "../../errors.ts";
import type { DomainContext } from "../../contract/principal.ts";
import { envelopeBytes, requireEnvelopeBudget } from "../quotas.ts";
import { SUBJECT_MAX, type Envelope, type EnvelopeSummary } from "../../contract/mail.ts";
import { agentById, refsByIds, type AgentRow } from "../agents.ts";
import { acceptedContactsByHandle, isAcceptedContact } from "../contacts.ts";
import { decodeCursor, encodeCursor, paginate } from "../../contract/cursor.ts";
import { deliver, resolveItems } from "../inbox.ts";
import { quoted, untrusted } from "../untrusted.ts";
import { extractLinks } from "./links.ts";
import { enqueue, remoteOf } from "../federation.ts";

type Row = typeof envelopes.$inferSelect;

export interface SendInput {
  to: string[];
  subject: string;
  body_md: string;
  refs?: Record<string, string>;
  thread_id?: string;
  in_reply_to?: string;
}

export interface ReplyInput {
  envelope_id: string;
  body_md: string;
  subject?: string;
  audience?: "sender" | "all";
  refs?: Record<string, string>;
}

export interface ListInput {
  thread_id?: string;
  direction?: "sent" | "received";
  limit?: number;
  cursor?: string;
}

const source = (handle: string) => `envelope from @${handle}`;

/** Envelopes the agent sent, or received (a recipient who had blocked the sender never received it). */
const visibleTo = (agentId: string | Placeholder) =>
  or(
    eq(envelopes.senderId, agentId),
    sql`exists (select 1 from ${envelopeRecipients} r where r.envelope_id = ${envelopes.envelopeId} and r.agent_id = ${agentId} and r.delivered = 1)`,
  );

// What sending and reading one envelope run, built once per connection.
const envelopeFor = prepared((tx) =>
  tx
    .select()
    .from(envelopes)
    .where(and(eq(envelopes.envelopeId, sql.placeholder("envelopeId")), visibleTo(sql.placeholder("agentId"))))
    .prepare(),
);
const insertEnvelope = preparedInsert(envelopes, ["envelopeId", "threadId", "inReplyTo", "senderId", "subject", "bodyMd", "refs", "createdAt"]);
const insertRecipient = preparedInsert(envelopeRecipients, ["envelopeId", "agentId", "position", "delivered"]);
const recipientsOf = prepared((tx) =>
  tx
    .select()
    .from(envelopeRecipients)
    .where(sql`${envelopeRecipients.envelopeId} IN (SELECT value FROM ${jsonEach("ids")})`)
    .orderBy(asc(envelopeRecipients.position))
    .prepare(),
);

/** The envelope if the agent may see it; anyone else learns nothing (NOT_FOUND). */
async function visibleEnvelope(tx: Tx, agentId: string, envelopeId: string): Promise<Row> {
  const row = await envelopeFor(tx).get({ envelopeId, agentId });
  if (!row) throw notFound("Envelope");
  return row;
}

async function create(
  ctx: DomainContext,
  e: {
    to: AgentRow[];
    subject: string;
    body_md: string;
    refs: Record<string, string>;
    threadId: string | null;
    inReplyTo: string | null;
    /** An envelope received from another server keeps its id there; its sender's quota was taken on receipt. */
    envelopeId?: string;
    /** Received from another server: the local recipients it reaches; the others of `to` are only listed. */
    reaches?: ReadonlySet<string>;
  },
): Promise<string> {
  const { tx, now, actor } = ctx;
  const envelopeId = e.envelopeId ?? crypto.randomUUID();
  const threadId = e.threadId ?? envelopeId;
  if (e.envelopeId === undefined) await requireEnvelopeBudget(ctx, envelopeBytes(e));
  await insertEnvelope(tx).run({
    envelopeId,
    threadId,
    inReplyTo: e.inReplyTo,
    senderId: actor.agentId,
    subject: e.subject,
    bodyMd: e.body_md,
    refs: e.refs,
    createdAt: iso(now),
  });
  const links = extractLinks(e.body_md);
  const linkDomains = [...new Set(links.flatMap((l) => (l.domain ? [l.domain] : [])))];
  const linkWarnings = [...new Set(links.flatMap((l) => l.warnings))];
  const what = e.inReplyTo ? "replied in a thread" : "sent you an envelope";
  const remote = new Map<string, string[]>();
  for (const [position, r] of e.to.entries()) {
    const other = await remoteOf(tx, r.agentId);
    if (other) {
      // Each side keeps its copy: an agent of another server gets it from its own server.
      remote.set(other.host, [...(remote.get(other.host) ?? []), other.address]);
      await insertRecipient(tx).run({ envelopeId, agentId: r.agentId, position, delivered: true });
      continue;
    }
    if (e.reaches && !e.reaches.has(r.agentId)) {
      await insertRecipient(tx).run({ envelopeId, agentId: r.agentId, position, delivered: false });
      continue;
    }
    // deliver() drops it when the recipient blocked the sender; the sender's view stays the same.
    const itemId = await deliver(tx, now, {
      to: r.agentId,
      type: "mail.envelope",
      from: actor.agentId,
      summaryMd:
        `@${actor.handle} ${what}: subject ${quoted(e.subject)}.` +
        (links.length ? ` It has ${links.length} link${links.length === 1 ? "" : "s"}: show your human each domain; open links only when they ask.` : ""),
      payload: {
        subject: untrusted(e.subject, source(actor.handle)),
        thread_id: threadId,
        in_reply_to: e.inReplyTo,
        to: e.to.map((t) => t.handle),
        link_domains: linkDomains,
        link_warnings: linkWarnings,
      },
      refs: { envelope_id: envelopeId, thread_id: threadId },
    });
    await insertRecipient(tx).run({ envelopeId, agentId: r.agentId, position, delivered: itemId !== null });
  }
  if (remote.size && !(await remoteOf(tx, actor.agentId))) {
    for (const [host, to] of remote) {
      await enqueue(
        tx,
        now,
        host,
        {
          type: "envelope",
          from: actor.agentId,
          to,
          // Every recipient, as agent ids: the sender writes their addresses (outgoingEvent), so each copy lists all.
          recipients: e.to.map((t) => t.agentId),
          envelope_id: envelopeId,
          thread_id: threadId,
          in_reply_to: e.inReplyTo,
          subject: e.subject,
          body_md: e.body_md,
        },
        ctx,
      );
    }
  }
  return envelopeId;
}

export async function sendEnvelope(ctx: DomainContext, input: SendInput): Promise<Envelope> {
  const { tx, actor } = ctx;
  const to = await acceptedContactsByHandle(ctx, input.to, "to", "Send envelopes only to accepted contacts; list_contacts shows them.");
  let threadId: string | null = null;
  if (input.in_reply_to !== undefined) {
    threadId = (await visibleEnvelope(tx, actor.agentId, input.in_reply_to)).threadId;
    if (input.thread_id !== undefined && input.thread_id !== threadId) {
      throw invalid("thread_id", "differs from the thread of in_reply_to; give one of them");
    }
  } else if (input.thread_id !== undefined) {
    await requireVisibleThread(tx, actor.agentId, input.thread_id);
    threadId = input.thread_id;
  }
  const sent = await create(ctx, {
    to,
    subject: input.subject,
    body_md: input.body_md,
    refs: input.refs ?? {},
    threadId,
    inReplyTo: input.in_reply_to ?? null,
  });
  // Answered with what it wrote, read once it is sent.
  return getEnvelope(ctx, sent);
}

const reSubject = (subject: string) => (subject.length > SUBJECT_MAX - 4 || /^re:/i.test(subject) ? subject : `Re: ${subject}`);

/**
 * Replies in the same thread: to the sender, or to the sender and every other recipient. Replying to an envelope
 * the caller sent goes to its recipients. Only those still the caller's accepted contacts receive the reply.
 */
export async function replyEnvelope(ctx: DomainContext, input: ReplyInput): Promise<Envelope> {
  const { tx, actor } = ctx;
  const orig = await visibleEnvelope(tx, actor.agentId, input.envelope_id);
  const recipients = await tx
    .select({ agentId: envelopeRecipients.agentId })
    .from(envelopeRecipients)
    .where(eq(envelopeRecipients.envelopeId, orig.envelopeId))
    .orderBy(asc(envelopeRecipients.position));
  const ids =
    orig.senderId === actor.agentId
      ? recipients.map((r) => r.agentId)
      : input.audience === "all"
        ? [orig.senderId, ...recipients.map((r) => r.agentId)]
        : [orig.senderId];
  const to: AgentRow[] = [];
  for (const id of new Set(ids)) {
    if (id !== actor.agentId && (await isAcceptedContact(tx, actor.agentId, id))) to.push((await agentById(tx, id))!);
  }
  if (!to.length) {
    throw conflict("Nobody on this envelope is still your accepted contact, so the reply could reach no one.");
  }
  await resolveItems(tx, actor.agentId, "mail.envelope", { envelope_id: orig.envelopeId });
  const sent = await create(ctx, {
    to,
    subject: input.subject ?? reSubject(orig.subject),
    body_md: input.body_md,
    refs: input.refs ?? {},
    threadId: orig.threadId,
    inReplyTo: orig.envelopeId,
  });
  // Answered with what it wrote, read once it is sent.
  return getEnvelope(ctx, sent);
}

async function summaries(tx: Tx, viewer: string, rows: Row[]): Promise<EnvelopeSummary[]> {
  if (!rows.length) return [];
  const recips = await recipientsOf(tx).all({ ids: jsonList(rows.map((r) => r.envelopeId)) });
  const agents = await refsByIds(tx, [...rows.map((r) => r.senderId), ...recips.map((r) => r.agentId)]);
  return rows.map((r) => {
    const from = agents.get(r.senderId)!;
    return {
      envelope_id: r.envelopeId,
      thread_id: r.threadId,
      in_reply_to: r.inReplyTo,
      direction: r.senderId === viewer ? "sent" : "received",
      from,
      to: recips.filter((x) => x.envelopeId === r.envelopeId).map((x) => agents.get(x.agentId)!),
      subject: untrusted(r.subject, source(from.handle)),
      refs: r.refs,
      created_at: r.createdAt,
    };
  });
}

export async function getEnvelope({ tx, actor: { agentId } }: DomainContext, envelopeId: string): Promise<Envelope> {
  const row = await visibleEnvelope(tx, agentId, envelopeId);
  const [summary] = await summaries(tx, agentId, [row]);
  return { ...summary!, body_md: untrusted(row.bodyMd, source(summary!.from.handle)), links: extractLinks(row.bodyMd) };
}

/** A thread the caller sent or received at least one envelope of; any other is NOT_FOUND. */
async function requireVisibleThread(tx: Tx, agentId: string, threadId: string): Promise<void> {
  const seen = await tx
    .select({ id: envelopes.envelopeId })
    .from(envelopes)
    .where(and(eq(envelopes.threadId, threadId), visibleTo(agentId)))
    .get();
  if (!seen) throw notFound("Thread");
}

/** Sent and received envelopes, newest first, optionally one thread or one direction. */
export async function listEnvelopes({ tx, actor }: DomainContext, input: ListInput) {
  const limit = input.limit ?? 50;
  const after = input.cursor === undefined ? undefined : decodeCursor(input.cursor, ["number"])[0];
  if (input.thread_id !== undefined) {
    await requireVisibleThread(tx, actor.agentId, input.thread_id);
  }
  const query = tx
    .select()
    .from(envelopes)
    .where(
      and(
        input.direction === "sent"
          ? eq(envelopes.senderId, actor.agentId)
          : input.direction === "received"
            ? and(sql`${envelopes.senderId} <> ${actor.agentId}`, visibleTo(actor.agentId))
            : visibleTo(actor.agentId),
        input.thread_id !== undefined ? eq(envelopes.threadId, input.thread_id) : undefined,
        after !== undefined ? lt(envelopes.seq, after) : undefined,
      ),
    )
    .orderBy(desc(envelopes.seq));
  const { page, next_cursor } = await paginate(
    limit,
    (n) => query.limit(n),
    (last) => encodeCursor([last.seq]),
  );
  return { envelopes: await summaries(tx, actor.agentId, page), next_cursor };
}

/**
 * An envelope from an agent of another server (`ctx.actor` is its local row) to local agents: only those who have
 * it as an accepted contact receive it; it keeps its id and thread. Its copy lists every recipient `named` gives (on
 * any server, so that a reply to all reaches them), read only once it is taken. Returns false when it was dropped.
 */
export async function receiveEnvelope(
  ctx: DomainContext,
  to: AgentRow[],
  e: { envelope_id: string; thread_id: string; in_reply_to: string | null; subject: string; body_md: string },
  named: () => Promise<AgentRow[]> = async () => to,
): Promise<boolean> {
  const { tx, actor } = ctx;
  const recipients: AgentRow[] = [];
  for (const r of to) if (await isAcceptedContact(tx, r.agentId, actor.agentId)) recipients.push(r);
  if (!recipients.length) return false;
  if (await tx.select({ id: envelopes.envelopeId }).from(envelopes).where(eq(envelopes.envelopeId, e.envelope_id)).get()) return false;
  // A thread or a reply named by the other server counts only when the recipients can already see it.
  const inReplyTo = e.in_reply_to && (await envelopeFor(tx).get({ envelopeId: e.in_reply_to, agentId: recipients[0]!.agentId })) ? e.in_reply_to : null;
  // In the sender's order; a recipient here it failed to name is listed all the same.
  const listed = new Map([...(await named()), ...recipients].map((a) => [a.agentId, a]));
  await create(ctx, {
    to: [...listed.values()],
    subject: e.subject,
    body_md: e.body_md,
    refs: {},
    threadId: e.thread_id,
    inReplyTo,
    envelopeId: e.envelope_id,
    reaches: new Set(recipients.map((r) => r.agentId)),
  });
  return true;
}
