// What crosses between servers, checked again against svc's own schemas on receipt (the other server is untrusted
// too), and dispatched to the domain. Every event is answered "ok" whether it was taken or dropped (block, no
// consent, unknown handle or code), so that a sender learns nothing; a malformed event is "rejected", and an envelope
// past the operator's quota for its sender "refused" (counted on what the sender sent, taken or dropped alike, so
// the refusal too says nothing of consent): the sending server tells its agent it was not delivered.
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { federationEventsSeen } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { BodyMd, Subject } from "../contract/mail.ts";
import type { DomainContext } from "../contract/principal.ts";
import { acceptedByRemote, addContact, contactState, removedByRemote } from "../domain/contacts.ts";
import {
  acceptsFromServers,
  enqueue,
  ensureRemoteAgent,
  ensureRemoteAgents,
  localAgentByCode,
  localAgentByHandle,
  parseAddress,
  remoteOf,
  takeCodeRequest,
} from "../domain/federation.ts";
import { receiveEnvelope } from "../domain/mail/envelopes.ts";
import { receivePlan, receivePlanResponse } from "../domain/plans/plans.ts";
import { DateTimeInput, PlanDescription, PlanTitle, Place, PLAN_STATES, RESPONSES } from "../contract/plans.ts";
import { remoteAccountDeleted } from "../domain/account-deletion.ts";
import { agentById, type AgentRow } from "../domain/agents.ts";
import { remoteAgents } from "../../db/schema/index.ts";
import { and, eq } from "drizzle-orm";
import { takeHostBudget } from "./limits.ts";
import { answerEventsRequest, receiveGroupEvents } from "./group-events.ts";
import { EVENTS_PAGE } from "../domain/ledger/events/log.ts";
import { receiveRemoteInvite } from "../domain/ledger/events/remote-invites.ts";
import { respondInvite } from "../domain/ledger/groups/invites.ts";
import type { FederationConfig, Quotas } from "../config.ts";
import { envelopeBytes, takeRemoteEnvelopeBudget } from "../domain/quotas.ts";

export const MAX_EVENTS = 50;

const Address = z
  .string()
  .max(300)
  .refine((v) => parseAddress(v) !== null, "expected handle@host");
const Id = z.uuid();
const Name = z.string().max(100).optional();

const PlanCopy = z.strictObject({
  plan_id: Id,
  title: PlanTitle,
  description: PlanDescription,
  respond_by: DateTimeInput.nullable(),
  state: z.enum(PLAN_STATES),
  chosen_option_id: Id.nullable(),
  options: z
    .array(z.strictObject({ option_id: Id, starts_at: DateTimeInput, ends_at: DateTimeInput.nullable(), place: Place.nullable() }))
    .min(1)
    .max(10)
    .refine((os) => new Set(os.map((o) => o.option_id)).size === os.length, "an option_id appears twice"),
});
const PlanChange = z.enum(["title", "description", "respond_by", "options", "chosen_option", "invitees"]);
const Recipients = z.array(Address).min(1).max(MAX_EVENTS);

export const FederationEvent = z.discriminatedUnion("type", [
  z.strictObject({
    id: Id,
    type: z.literal("contact.request"),
    from: Address,
    display_name: Name,
    to: Address.optional(),
    code: z.string().min(3).max(120).optional(),
    note: z.string().max(500).nullable().optional(),
  }),
  z.strictObject({ id: Id, type: z.literal("contact.accept"), from: Address, display_name: Name, to: Address }),
  z.strictObject({ id: Id, type: z.literal("contact.remove"), from: Address, display_name: Name, to: Address }),
  /** Its sender's account was deleted on its server (a feature beyond version 1: discovery.ts). */
  z.strictObject({ id: Id, type: z.literal("account.deleted"), from: Address, display_name: Name }),
  z.strictObject({
    id: Id,
    type: z.literal("envelope"),
    from: Address,
    display_name: Name,
    to: z.array(Address).min(1).max(MAX_EVENTS),
    // Every recipient, on any server (`to`: those of the receiving one), so that each copy lists them all.
    recipients: z.array(Address).min(1).max(MAX_EVENTS).optional(),
    envelope_id: Id,
    thread_id: Id,
    in_reply_to: Id.nullable(),
    subject: Subject,
    body_md: BodyMd,
  }),
  z.strictObject({ id: Id, type: z.literal("plan.invite"), from: Address, display_name: Name, to: Recipients, plan: PlanCopy }),
  z.strictObject({
    id: Id,
    type: z.literal("plan.update"),
    from: Address,
    display_name: Name,
    to: Recipients,
    plan: PlanCopy,
    changes: z.array(PlanChange).max(6),
  }),
  z.strictObject({
    id: Id,
    type: z.literal("plan.cancel"),
    from: Address,
    display_name: Name,
    to: Recipients,
    plan: PlanCopy,
    reason: z.enum(["cancelled", "uninvited"]),
  }),
  z.strictObject({
    id: Id,
    type: z.literal("group.invite"),
    from: Address,
    display_name: Name,
    to: Address,
    invite_id: Id,
    group_id: Id,
    group_name: z.string().min(1).max(200),
    currency: z.string().regex(/^[A-Z]{3}$/),
    expires_at: DateTimeInput,
  }),
  z.strictObject({
    id: Id,
    type: z.literal("group.invite_respond"),
    from: Address,
    display_name: Name,
    to: Address,
    invite_id: Id,
    action: z.enum(["accept", "decline"]),
  }),
  z.strictObject({
    id: Id,
    type: z.literal("group.events"),
    from: Address,
    display_name: Name,
    group_id: Id,
    head_seq: z.number().int().min(1),
    events: z
      .array(z.strictObject({ body: z.string().max(256 * 1024), hash: z.string().regex(/^[0-9a-f]{64}$/) }))
      .min(1)
      .max(EVENTS_PAGE),
  }),
  z.strictObject({ id: Id, type: z.literal("group.events_request"), from: Address, display_name: Name, group_id: Id, after_seq: z.number().int().min(0) }),
  z.strictObject({
    id: Id,
    type: z.literal("plan.respond"),
    from: Address,
    display_name: Name,
    to: Address,
    plan_id: Id,
    response: z.enum(RESPONSES),
    option_ids: z.array(Id).max(10),
  }),
]);
export type FederationEvent = z.infer<typeof FederationEvent>;

export const Transaction = z.object({
  origin: z.string().max(300),
  destination: z.string().max(300),
  events: z.array(z.unknown()).max(MAX_EVENTS),
});

export interface EventResult {
  id: string | null;
  result: "ok" | "rejected" | "refused";
}

export interface Receiver {
  db: Db;
  now: Date;
  origin: string;
  selfHost: string;
  /** In open mode, a host first seen lately: only requests that carry a code pass. */
  greylisted: boolean;
  limits?: FederationConfig["limits"];
  /** The operator's per-agent quotas (--quota): they hold for agents of other servers too. */
  quotas: Quotas;
}

/** An event refused for a quota: not applied, and answered "refused". */
class Refused extends Error {}

const hostOf = (address: string) => parseAddress(address)!.host;
const handleOf = (address: string) => parseAddress(address)!.handle;

/** Checks and applies one event in its own transaction; a duplicate id (within 30 days) is dropped. */
export async function receiveEvent(r: Receiver, raw: unknown): Promise<EventResult> {
  const parsed = FederationEvent.safeParse(raw);
  const id = typeof (raw as { id?: unknown } | null)?.id === "string" ? String((raw as { id: string }).id).slice(0, 64) : null;
  if (!parsed.success) return { id, result: "rejected" };
  const e = parsed.data;
  // A server speaks only for its own agents, and only to ours.
  const to = "to" in e && e.to !== undefined ? (Array.isArray(e.to) ? e.to : [e.to]) : [];
  if (hostOf(e.from) !== r.origin || to.some((a) => hostOf(a) !== r.selfHost)) return { id: e.id, result: "rejected" };
  if (e.type === "contact.request" && (e.code === undefined) === (e.to === undefined)) return { id: e.id, result: "rejected" };
  // A page of a group's events is applied event by event, each in its own write call, in order (and is idempotent by
  // its seqs, so it needs no record of ids seen).
  if (e.type === "group.events") return { id: e.id, result: await receiveGroupEvents(r.db, r.now, r.origin, r.selfHost, e) };
  if (e.type === "group.events_request") {
    await answerEventsRequest(r.db, r.now, r.origin, e.group_id, e.after_seq);
    return { id: e.id, result: "ok" };
  }
  try {
    await r.db.tx(async (tx) => {
      // An event seen already is applied once: one arriving twice at the same moment fails this batch on the key, and
      // runs again to find it seen.
      const seen = await tx
        .select({ id: federationEventsSeen.eventId })
        .from(federationEventsSeen)
        .where(and(eq(federationEventsSeen.origin, r.origin), eq(federationEventsSeen.eventId, e.id)))
        .get();
      if (seen) return;
      await tx.insert(federationEventsSeen).values({ origin: r.origin, eventId: e.id, receivedAt: iso(r.now) });
      await apply(r, { tx, now: r.now }, e);
    });
  } catch (err) {
    // A quota's refusal is said (and nothing of the event is kept, its id included); anything else is dropped as if
    // refused for consent: the sender's answer is the same.
    if (err instanceof Refused) return { id: e.id, result: "refused" };
  }
  return { id: e.id, result: "ok" };
}

type TxNow = Pick<DomainContext, "tx" | "now">;

const actorOf = (a: AgentRow) => ({ agentId: a.agentId, handle: a.handle });
const knownRemote = async ({ tx }: TxNow, address: string): Promise<AgentRow | undefined> => {
  const row = await tx.select().from(remoteAgents).where(eq(remoteAgents.address, address.toLowerCase())).get();
  return row ? agentById(tx, row.agentId) : undefined;
};
const noGroups = async () => false;

/** The addressees of an event that are agents of this server; the others are not this server's to reach. */
async function localRecipients(tx: TxNow["tx"], addresses: readonly string[]): Promise<AgentRow[]> {
  const locals: AgentRow[] = [];
  for (const a of addresses) {
    const l = await localAgentByHandle(tx, handleOf(a));
    if (l) locals.push(l);
  }
  return locals;
}

/**
 * The recipients an envelope names, in its order, as this server knows them: its own agents by handle (unknown
 * handles left out), agents of other servers by their rows, made for those not met before (after every read: the
 * call writes on); the sender is not its own recipient.
 */
async function namedRecipients(r: Receiver, { tx, now }: TxNow, addresses: readonly string[], from: string): Promise<AgentRow[]> {
  const sender = parseAddress(from)!;
  const named = addresses.map((a) => parseAddress(a)!).filter((a) => a.handle !== sender.handle || a.host !== sender.host);
  const locals = new Map<string, AgentRow | undefined>();
  for (const a of named) if (a.host === r.selfHost) locals.set(a.handle, await localAgentByHandle(tx, a.handle));
  const address = (a: { handle: string; host: string }) => `${a.handle}@${a.host}`;
  const others = await ensureRemoteAgents(tx, now, named.filter((a) => a.host !== r.selfHost).map(address));
  return named.flatMap((a) => {
    const row = a.host === r.selfHost ? locals.get(a.handle) : others.get(address(a));
    return row ? [row] : [];
  });
}

async function apply(r: Receiver, c: TxNow, e: FederationEvent): Promise<void> {
  const { tx, now } = c;
  switch (e.type) {
    case "contact.request": {
      if (!(await takeHostBudget(tx, r.origin, "contact_requests", now, 1, r.limits))) return;
      if (e.code !== undefined && !(await takeHostBudget(tx, r.origin, "code_guesses", now, 1, r.limits))) return;
      const target = e.code !== undefined ? await localAgentByCode(tx, e.code) : await localAgentByHandle(tx, handleOf(e.to!));
      if (!target) return;
      // What our agent already said of them is its consent, whatever it accepts from strangers: it asked them too
      // (crossing requests become a contact, as on one server), or it counts them as a contact already and their
      // side has lost it (their agent blocked ours, then asked again): their server hears our accept again.
      const known = await knownRemote(c, e.from);
      const ours = known ? await contactState(tx, target.agentId, known.agentId) : null;
      if (ours === "accepted") {
        await enqueue(tx, now, r.origin, { type: "contact.accept", from: target.agentId, to: e.from });
        return;
      }
      if (ours !== "outgoing") {
        if (r.greylisted && e.code === undefined) return;
        const accepts = await acceptsFromServers(tx, target.agentId);
        if (accepts === "none" || (e.code === undefined && accepts !== "address")) return;
      }
      const them = await ensureRemoteAgent(tx, now, e.from, e.display_name);
      const input = e.code !== undefined ? { code: e.code } : { handle: target.handle };
      const res = await addContact({ tx, now, actor: actorOf(them) }, { ...input, note: e.note ?? undefined }, noGroups);
      // Our agent had asked them already: both sides are contacts now, and their server must hear it.
      if (res.status === "accepted") await enqueue(tx, now, r.origin, { type: "contact.accept", from: target.agentId, to: e.from });
      return;
    }
    case "contact.accept": {
      const local = await localAgentByHandle(tx, handleOf(e.to));
      if (!local) return;
      const known = await knownRemote(c, e.from);
      // A request by address is answered by its own row; only otherwise is a pending request by code taken.
      const askedByAddress = known !== undefined && (await contactState(tx, local.agentId, known.agentId)) === "outgoing";
      const askedByCode = !askedByAddress && (await takeCodeRequest(tx, now, local.agentId, r.origin));
      if (!known && !askedByCode) return;
      const them = known ?? (await ensureRemoteAgent(tx, now, e.from, e.display_name));
      await acceptedByRemote(tx, now, local, them, askedByCode);
      return;
    }
    case "contact.remove": {
      const local = await localAgentByHandle(tx, handleOf(e.to));
      const them = await knownRemote(c, e.from);
      if (local && them) await removedByRemote(tx, them, local);
      return;
    }
    case "account.deleted": {
      const them = await knownRemote(c, e.from);
      if (them && !them.retiredAt) await remoteAccountDeleted(tx, now, them, r.origin);
      return;
    }
    case "envelope": {
      // Before anything about the recipients: the answer then depends only on what the sender sent.
      if (!(await takeRemoteEnvelopeBudget(tx, now, e.from, envelopeBytes(e), r.quotas.envelopeBytesPerDay))) throw new Refused();
      const them = await knownRemote(c, e.from);
      if (!them) return;
      const locals = await localRecipients(tx, e.to);
      // A sender of an older release names only this server's recipients.
      const named = () => namedRecipients(r, c, e.recipients ?? e.to, e.from);
      await receiveEnvelope({ tx, now, actor: actorOf(them), config: { quotas: r.quotas } }, locals, e, named);
      return;
    }
    case "plan.invite":
    case "plan.update":
    case "plan.cancel": {
      const them = await knownRemote(c, e.from);
      if (!them) return;
      const locals = await localRecipients(tx, e.to);
      const detail = e.type === "plan.update" ? { changes: e.changes } : e.type === "plan.cancel" ? { reason: e.reason } : {};
      await receivePlan({ tx, now, actor: actorOf(them) }, e.plan, locals, e.type, detail);
      return;
    }
    case "group.invite": {
      const them = await knownRemote(c, e.from);
      const local = await localAgentByHandle(tx, handleOf(e.to));
      if (them && local) await receiveRemoteInvite(tx, now, them, local, r.origin, e);
      return;
    }
    case "group.invite_respond": {
      const them = await knownRemote(c, e.from);
      // Answered as the invitee would on this server; a stale or repeated answer fails, and changes nothing.
      if (them) await respondInvite({ tx, now, actor: actorOf(them), config: { quotas: r.quotas } }, e.invite_id, e.action);
      return;
    }
    case "group.events":
    case "group.events_request":
      return;
    case "plan.respond": {
      const them = await knownRemote(c, e.from);
      if (them) await receivePlanResponse({ tx, now, actor: actorOf(them) }, e);
      return;
    }
  }
}

/** The local agent an outbox event speaks for, as its address; null when it is gone or not local. */
async function senderAddress(c: TxNow, agentId: string, selfHost: string): Promise<{ from: string; display_name: string } | null> {
  const a = await agentById(c.tx, agentId);
  if (!a || (await remoteOf(c.tx, agentId))) return null;
  return { from: `${a.handle}@${selfHost}`, display_name: a.displayName };
}

/**
 * An outbox event as it is sent, or null when the local agent it speaks for is gone: `from` becomes that agent's
 * address, and an envelope's `recipients` (agent ids in the outbox) the addresses handle@host, read now as for
 * `from`; agents gone meanwhile are left out. `recipients` goes only to a peer that lists the feature (discovery.ts).
 */
export async function outgoingEvent(
  c: TxNow,
  event: Record<string, unknown>,
  selfHost: string,
  peerFeatures: ReadonlySet<string>,
): Promise<Record<string, unknown> | null> {
  const from = await senderAddress(c, String(event.from), selfHost);
  if (!from) return null;
  // A peer of an earlier release refuses an event type it does not know: what it would refuse is not sent.
  if (event.type === "account.deleted" && !peerFeatures.has("account.deleted")) return null;
  const { recipients: ids, ...rest } = event;
  if (!Array.isArray(ids) || !peerFeatures.has("envelope.recipients")) return { ...rest, ...from };
  const recipients: string[] = [];
  for (const id of ids.map(String)) {
    const remote = await remoteOf(c.tx, id);
    const local = remote ? undefined : await agentById(c.tx, id);
    if (remote) recipients.push(remote.address);
    else if (local) recipients.push(`${local.handle}@${selfHost}`);
  }
  return { ...rest, ...from, ...(recipients.length ? { recipients } : {}) };
}
