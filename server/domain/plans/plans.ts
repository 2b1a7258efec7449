// Plans: something to do together, proposed by an organiser to some of their accepted contacts,
// voted on, scheduled by choosing an option, or cancelled. Only the organiser and invitees see a plan.
import { and, asc, desc, eq, gt, gte, inArray, lt, or, sql } from "drizzle-orm";
import { guardChanged, snapshotOf, type Tx } from "../../../db/client.ts";
import { expenses, groups, planInvitees, planOptions, plans } from "../../../db/schema/index.ts";
import { iso } from "../../clock.ts";
import { AppError, conflict, invalid, notFound } from "../../errors.ts";
import type { Actor, DomainContext } from "../../contract/principal.ts";
import { requireRoomForPlan } from "../quotas.ts";
import type { Plan, PlanExpense } from "../../contract/plans.ts";
import { refsByIds, type AgentRow } from "../agents.ts";
import { acceptedContactsByHandle } from "../contacts.ts";
import { decodeCursor, encodeCursor, paginate } from "../../contract/cursor.ts";
import { deliver, resolveItems } from "../inbox.ts";
import { isMember, requireWritable } from "../ledger/groups/membership.ts";
import { formatAmount } from "../ledger/money/amounts.ts";
import { quoted, untrusted } from "../untrusted.ts";
import { enqueue, remoteOf } from "../federation.ts";
import { isAcceptedContact } from "../contacts.ts";

type PlanRow = typeof plans.$inferSelect;
type OptionRow = typeof planOptions.$inferSelect;
type InviteeRow = typeof planInvitees.$inferSelect;
type Response = NonNullable<InviteeRow["response"]>;

export interface OptionInput {
  option_id?: string;
  starts_at: string;
  ends_at?: string;
  place?: string;
}

export interface CreateInput {
  title: string;
  description?: string;
  options: OptionInput[];
  invitees: string[];
  group_id?: string;
  respond_by?: string;
}

export interface UpdateInput {
  plan_id: string;
  title?: string;
  description?: string;
  respond_by?: string | null;
  options?: OptionInput[];
  add_invitees?: string[];
  remove_invitees?: string[];
  choose_option_id?: string;
}

export interface ListInput {
  when?: "upcoming" | "past";
  state?: PlanRow["state"];
  limit?: number;
  cursor?: string;
}

const source = (handle: string) => `plan by @${handle}`;
const stamp = (t: string) => new Date(t).toISOString();

/** Plans the agent organises, or was invited to (an invitee who had blocked the organiser never was). */
const visibleTo = (agentId: string) =>
  or(
    eq(plans.organiserId, agentId),
    sql`exists (select 1 from ${planInvitees} i where i.plan_id = ${plans.planId} and i.agent_id = ${agentId} and i.delivered = 1)`,
  );

async function visiblePlan(tx: Tx, agentId: string, planId: string): Promise<PlanRow> {
  const row = await tx
    .select()
    .from(plans)
    .where(and(eq(plans.planId, planId), visibleTo(agentId)))
    .get();
  if (!row) throw notFound("Plan");
  return row;
}

/** A plan the caller organises and that is not cancelled. */
async function ownPlan(tx: Tx, actor: Actor, planId: string, verb: string): Promise<PlanRow> {
  const plan = await visiblePlan(tx, actor.agentId, planId);
  if (plan.organiserId !== actor.agentId) {
    throw new AppError(
      "FORBIDDEN",
      `Only the plan's organiser can ${verb} it.`,
      undefined,
      undefined,
      "Answer the plan with respond_plan, or ask the organiser.",
    );
  }
  if (plan.state === "cancelled") throw conflict("The plan is cancelled; nothing about it can change.");
  return plan;
}

/** Normalised options, each end after its start. */
function checkOptions(options: OptionInput[], path: string): { startsAt: string; endsAt: string | null; place: string | null; optionId?: string }[] {
  return options.map((o, i) => {
    const startsAt = stamp(o.starts_at);
    const endsAt = o.ends_at === undefined ? null : stamp(o.ends_at);
    if (endsAt !== null && endsAt <= startsAt) throw invalid(`${path}[${i}].ends_at`, "must be after starts_at");
    return { startsAt, endsAt, place: o.place ?? null, optionId: o.option_id };
  });
}

function checkRespondBy(respondBy: string, now: Date): string {
  const at = stamp(respondBy);
  if (at <= iso(now)) throw invalid("respond_by", "must be in the future");
  return at;
}

/**
 * Invitees must be the organiser's accepted contacts (any other handle is NOT_FOUND, revealing nothing) and, for a
 * plan with a group, members of it.
 */
async function resolveInvitees(ctx: DomainContext, handles: string[], groupId: string | null, path: string): Promise<AgentRow[]> {
  const { tx } = ctx;
  const found = await acceptedContactsByHandle(ctx, handles, path, "Invite only accepted contacts; list_contacts shows them.");
  if (groupId !== null) {
    const outside: string[] = [];
    for (const a of found) if (!(await isMember(tx, groupId, a.agentId))) outside.push(a.handle);
    if (outside.length) throw invalid(path, `not members of the plan's group: ${outside.map((h) => `@${h}`).join(", ")}`);
  }
  return found;
}

/** When the plan happens: the chosen option, or the span of all options. */
function span(options: Pick<OptionRow, "optionId" | "startsAt" | "endsAt">[], chosen: string | null) {
  const picked = chosen === null ? options : options.filter((o) => o.optionId === chosen);
  return {
    startsAt: picked.map((o) => o.startsAt).sort()[0]!,
    endsAt: picked
      .map((o) => o.endsAt ?? o.startsAt)
      .sort()
      .at(-1)!,
  };
}

const optionView = (o: Pick<OptionRow, "optionId" | "startsAt" | "endsAt" | "place">, src: string) => ({
  option_id: o.optionId,
  starts_at: o.startsAt,
  ends_at: o.endsAt,
  place: o.place === null ? null : untrusted(o.place, src),
});

async function invite(tx: Tx, now: Date, actor: Actor, plan: PlanRow, options: OptionRow[], to: AgentRow[], firstPosition: number, room?: DomainContext) {
  const src = source(actor.handle);
  const remote: string[] = [];
  for (const [i, a] of to.entries()) {
    if (await remoteOf(tx, a.agentId)) {
      // Their own server invites them, from the copy of the plan it is sent.
      remote.push(a.agentId);
      await tx.insert(planInvitees).values({ planId: plan.planId, agentId: a.agentId, position: firstPosition + i, delivered: true, optionIds: [] });
      continue;
    }
    // deliver() drops it when the invitee blocked the organiser, who is not told.
    const itemId = await deliver(tx, now, {
      to: a.agentId,
      type: "plan.invitation",
      from: actor.agentId,
      summaryMd:
        `@${actor.handle} invites you to a plan: ${quoted(plan.title)}, ${options.length} option${options.length === 1 ? "" : "s"}` +
        `${plan.respondBy ? `; answer by ${plan.respondBy}` : ""}. Ask your human, then answer with respond_plan.`,
      payload: {
        title: untrusted(plan.title, src),
        description: plan.description ? untrusted(plan.description, src) : null,
        options: options.map((o) => optionView(o, src)),
        respond_by: plan.respondBy,
        organiser: actor.handle,
        group_id: plan.groupId,
      },
      refs: { plan_id: plan.planId, ...(plan.groupId ? { group_id: plan.groupId } : {}) },
    });
    await tx.insert(planInvitees).values({
      planId: plan.planId,
      agentId: a.agentId,
      position: firstPosition + i,
      delivered: itemId !== null,
      optionIds: [],
    });
  }
  await sendPlan(tx, now, actor, plan, remote, "plan.invite", {}, room, options);
}

/** The plan as another server is sent it: what its invitees see, nothing of the group or of other invitees. */
async function snapshot(tx: Tx, plan: PlanRow, known?: OptionRow[]) {
  // The options as the call has them (it may have just written them), else as it read them.
  const options = known ?? (await snapshotOf(tx).select().from(planOptions).where(eq(planOptions.planId, plan.planId)).orderBy(asc(planOptions.position)));
  return {
    plan_id: plan.planId,
    title: plan.title,
    description: plan.description,
    respond_by: plan.respondBy,
    state: plan.state,
    chosen_option_id: plan.chosenOptionId,
    options: options.map((o) => ({ option_id: o.optionId, starts_at: o.startsAt, ends_at: o.endsAt, place: o.place })),
  };
}

/**
 * The organiser's server holds the plan: invitations and changes go to the servers of remote invitees (`to`, agent
 * ids), grouped by host. A copy held for a remote organiser sends nothing. `room`: the organiser's call, held to its
 * pending_hosts quota (a cancellation is not).
 */
async function sendPlan(
  tx: Tx,
  now: Date,
  actor: Actor,
  plan: PlanRow,
  to: string[],
  type: "plan.invite" | "plan.update" | "plan.cancel",
  extra = {},
  room?: DomainContext,
  options?: OptionRow[],
) {
  if (!to.length || (await remoteOf(tx, actor.agentId))) return;
  const byHost = new Map<string, string[]>();
  for (const id of to) {
    const r = await remoteOf(tx, id);
    if (r) byHost.set(r.host, [...(byHost.get(r.host) ?? []), r.address]);
  }
  const plan_ = await snapshot(tx, plan, options);
  for (const [host, addresses] of byHost) await enqueue(tx, now, host, { type, from: actor.agentId, to: addresses, plan: plan_, ...extra }, room);
}

export async function createPlan(ctx: DomainContext, input: CreateInput): Promise<Plan> {
  const { tx, now, actor } = ctx;
  const groupId = input.group_id ?? null;
  // The plan's costs go to the group, so it must accept expenses.
  if (groupId !== null) await requireWritable(tx, groupId, actor.agentId);
  const to = await resolveInvitees(ctx, input.invitees, groupId, "invitees");
  const planId = crypto.randomUUID();
  const options: OptionRow[] = checkOptions(input.options, "options").map((o, position) => ({
    optionId: crypto.randomUUID(),
    planId,
    position,
    startsAt: o.startsAt,
    endsAt: o.endsAt,
    place: o.place,
  }));
  const at = iso(now);
  const plan: PlanRow = {
    planId,
    organiserId: actor.agentId,
    title: input.title,
    description: input.description ?? "",
    groupId,
    respondBy: input.respond_by === undefined ? null : checkRespondBy(input.respond_by, now),
    state: "proposed",
    chosenOptionId: null,
    ...span(options, null),
    createdAt: at,
    updatedAt: at,
  };
  await requireRoomForPlan(ctx);
  await tx.insert(plans).values(plan);
  await tx.insert(planOptions).values(options);
  await invite(tx, now, actor, plan, options, to, 0, ctx);
  return (await views(tx, actor.agentId, [plan]))[0]!;
}

async function views(tx: Tx, viewer: string, rows: PlanRow[]): Promise<Plan[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.planId);
  const options = await tx.select().from(planOptions).where(inArray(planOptions.planId, ids)).orderBy(asc(planOptions.position));
  const invitees = await tx.select().from(planInvitees).where(inArray(planInvitees.planId, ids)).orderBy(asc(planInvitees.position));
  const agents = await refsByIds(tx, [...rows.map((r) => r.organiserId), ...invitees.map((i) => i.agentId)]);
  return rows.map((p) => {
    const organiser = agents.get(p.organiserId)!;
    const src = source(organiser.handle);
    const mine = invitees.filter((i) => i.planId === p.planId);
    return {
      plan_id: p.planId,
      state: p.state,
      organiser,
      my_role: p.organiserId === viewer ? "organiser" : "invitee",
      title: untrusted(p.title, src),
      description: p.description ? untrusted(p.description, src) : null,
      options: options
        .filter((o) => o.planId === p.planId)
        .map((o) => ({ ...optionView(o, src), votes: mine.filter((i) => i.response !== "no" && i.optionIds.includes(o.optionId)).length })),
      chosen_option_id: p.chosenOptionId,
      group_id: p.groupId,
      respond_by: p.respondBy,
      invitees: mine.map((i) => ({
        agent: agents.get(i.agentId)!,
        response: i.response,
        option_ids: i.optionIds,
        responded_at: i.respondedAt,
      })),
      starts_at: p.startsAt,
      ends_at: p.endsAt,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
    };
  });
}

/** The plan with every response and, for a plan with a group, the group's expenses that name it (members only). */
export async function getPlan({ tx, actor }: DomainContext, planId: string): Promise<{ plan: Plan; expenses: PlanExpense[] }> {
  const row = await visiblePlan(tx, actor.agentId, planId);
  const plan = (await views(tx, actor.agentId, [row]))[0]!;
  if (row.groupId === null || !(await isMember(tx, row.groupId, actor.agentId))) return { plan, expenses: [] };
  const group = (await tx.select({ currency: groups.currency }).from(groups).where(eq(groups.groupId, row.groupId)).get())!;
  const rows = await tx
    .select()
    .from(expenses)
    .where(and(eq(expenses.groupId, row.groupId), eq(expenses.deleted, false), sql`json_extract(${expenses.refs}, '$.plan_id') = ${planId}`))
    .orderBy(asc(expenses.date), asc(expenses.createdAt));
  const writers = await refsByIds(
    tx,
    rows.map((e) => e.descriptionBy ?? e.createdBy),
  );
  return {
    plan,
    expenses: rows.map((e) => ({
      expense_id: e.expenseId,
      description: untrusted(e.description, `expense description by @${writers.get(e.descriptionBy ?? e.createdBy)?.handle ?? "unknown"}`),
      amount_minor: e.amountMinor,
      amount: formatAmount(e.amountMinor, group.currency),
      currency: group.currency,
      date: e.date,
    })),
  };
}

/**
 * Upcoming plans (not yet over) soonest first, or past ones most recent first. A plan is over when its chosen
 * option has ended, or, before one is chosen, when its last option has.
 */
export async function listPlans({ tx, now, actor }: DomainContext, input: ListInput) {
  const limit = input.limit ?? 50;
  const when = input.when ?? "upcoming";
  const after = input.cursor === undefined ? undefined : planCursor(input.cursor, when);
  const upcoming = when === "upcoming";
  const beyond = after
    ? upcoming
      ? or(gt(plans.startsAt, after.startsAt), and(eq(plans.startsAt, after.startsAt), gt(plans.planId, after.planId)))
      : or(lt(plans.startsAt, after.startsAt), and(eq(plans.startsAt, after.startsAt), lt(plans.planId, after.planId)))
    : undefined;
  const query = tx
    .select()
    .from(plans)
    .where(
      and(
        visibleTo(actor.agentId),
        upcoming ? gte(plans.endsAt, iso(now)) : lt(plans.endsAt, iso(now)),
        input.state ? eq(plans.state, input.state) : undefined,
        beyond,
      ),
    )
    .orderBy(...(upcoming ? [asc(plans.startsAt), asc(plans.planId)] : [desc(plans.startsAt), desc(plans.planId)]));
  const { page, next_cursor } = await paginate(
    limit,
    (n) => query.limit(n),
    (last) => encodeCursor([when, last.startsAt, last.planId]),
  );
  return { plans: await views(tx, actor.agentId, page), next_cursor };
}

/** A cursor of list_plans is bound to the `when` it was made for. */
function planCursor(cursor: string, when: string): { startsAt: string; planId: string } {
  const [madeFor, startsAt, planId] = decodeCursor(cursor, ["string", "string", "string"]);
  if (madeFor !== when) throw invalid("cursor", `not a cursor this tool returned for when=${when}`);
  return { startsAt, planId };
}

export async function respondPlan({ tx, now, actor }: DomainContext, input: { plan_id: string; response: Response; option_ids?: string[] }): Promise<Plan> {
  const plan = await visiblePlan(tx, actor.agentId, input.plan_id);
  if (plan.organiserId === actor.agentId) {
    throw new AppError("FORBIDDEN", "You organise this plan; only invitees respond to it.", undefined, undefined, "Change the plan with update_plan.");
  }
  if (plan.state === "cancelled") throw conflict("The plan is cancelled; there is nothing to answer.");
  const optionIds = [...new Set(input.option_ids ?? [])];
  if (input.response === "no" && optionIds.length) throw invalid("option_ids", "a 'no' votes for no option; leave option_ids empty");
  const known = new Set((await tx.select({ id: planOptions.optionId }).from(planOptions).where(eq(planOptions.planId, plan.planId))).map((o) => o.id));
  const unknown = optionIds.filter((id) => !known.has(id));
  if (unknown.length) throw invalid("option_ids", `not options of this plan: ${unknown.join(", ")}`);
  await tx
    .update(planInvitees)
    .set({ response: input.response, optionIds, respondedAt: iso(now) })
    .where(and(eq(planInvitees.planId, plan.planId), eq(planInvitees.agentId, actor.agentId)));
  await resolveItems(tx, actor.agentId, "plan.invitation", { plan_id: plan.planId });
  const votes = optionIds.length ? `, voting for ${optionIds.length} option${optionIds.length === 1 ? "" : "s"}` : "";
  const organiser = (await refsByIds(tx, [plan.organiserId])).get(plan.organiserId)!;
  const remoteOrganiser = await remoteOf(tx, plan.organiserId);
  if (remoteOrganiser) {
    // Responses go to the organiser's server, which holds the plan.
    await enqueue(tx, now, remoteOrganiser.host, {
      type: "plan.respond",
      from: actor.agentId,
      to: remoteOrganiser.address,
      plan_id: plan.planId,
      response: input.response,
      option_ids: optionIds,
    });
    return (await views(tx, actor.agentId, [await visiblePlan(tx, actor.agentId, plan.planId)]))[0]!;
  }
  await deliver(tx, now, {
    to: plan.organiserId,
    type: "plan.response",
    from: actor.agentId,
    summaryMd: `@${actor.handle} answered ${input.response} to your plan ${quoted(plan.title)}${votes}. Once your human picks an option, schedule it with update_plan choose_option_id.`,
    payload: { handle: actor.handle, response: input.response, option_ids: optionIds, title: untrusted(plan.title, source(organiser.handle)) },
    refs: { plan_id: plan.planId },
  });
  return (await views(tx, actor.agentId, [await visiblePlan(tx, actor.agentId, plan.planId)]))[0]!;
}

async function deliveredInvitees(tx: Tx, planId: string): Promise<InviteeRow[]> {
  return tx
    .select()
    .from(planInvitees)
    .where(and(eq(planInvitees.planId, planId), eq(planInvitees.delivered, true)));
}

/** Replaces the options: entries with an option_id keep that option; votes for dropped options are dropped. */
async function replaceOptions(tx: Tx, planId: string, current: OptionRow[], input: OptionInput[]): Promise<OptionRow[] | null> {
  const byId = new Map(current.map((o) => [o.optionId, o]));
  const wanted = checkOptions(input, "options").map((o, position): OptionRow => {
    if (o.optionId !== undefined && !byId.has(o.optionId)) throw invalid(`options[${position}].option_id`, "not an option of this plan");
    return { optionId: o.optionId ?? crypto.randomUUID(), planId, position, startsAt: o.startsAt, endsAt: o.endsAt, place: o.place };
  });
  if (new Set(wanted.map((o) => o.optionId)).size !== wanted.length) throw invalid("options", "an option_id appears twice");
  const unchanged = (o: OptionRow) => {
    const was = byId.get(o.optionId);
    return was !== undefined && was.position === o.position && was.startsAt === o.startsAt && was.endsAt === o.endsAt && was.place === o.place;
  };
  if (wanted.length === current.length && wanted.every(unchanged)) return null;
  await tx.delete(planOptions).where(eq(planOptions.planId, planId));
  await tx.insert(planOptions).values(wanted);
  const kept = new Set(wanted.map((o) => o.optionId));
  for (const i of await tx.select().from(planInvitees).where(eq(planInvitees.planId, planId))) {
    const votes = i.optionIds.filter((id) => kept.has(id));
    if (votes.length !== i.optionIds.length) {
      await tx
        .update(planInvitees)
        .set({ optionIds: votes })
        .where(and(eq(planInvitees.planId, planId), eq(planInvitees.agentId, i.agentId)));
    }
  }
  return wanted;
}

/** Takes invitees off and adds new ones (already invited handles are skipped); returns who was removed and added. */
async function changeInvitees(ctx: DomainContext, plan: PlanRow, remove: string[], add: string[]) {
  const { tx } = ctx;
  // As the call read them (the options' change may have rewritten their votes, not who they are).
  const invitees = await snapshotOf(tx).select().from(planInvitees).where(eq(planInvitees.planId, plan.planId));
  let removed: InviteeRow[] = [];
  if (remove.length) {
    const refs = await refsByIds(
      tx,
      invitees.map((i) => i.agentId),
    );
    const byHandle = new Map(Array.from(refs.values(), (r) => [r.handle, r.agent_id]));
    const notInvited = remove.filter((h) => !byHandle.has(h));
    if (notInvited.length) throw invalid("remove_invitees", `not invited: ${notInvited.map((h) => `@${h}`).join(", ")}`);
    const ids = new Set(remove.map((h) => byHandle.get(h)!));
    removed = invitees.filter((i) => ids.has(i.agentId));
    await tx.delete(planInvitees).where(and(eq(planInvitees.planId, plan.planId), inArray(planInvitees.agentId, [...ids])));
  }
  const staying = new Set(invitees.filter((i) => !removed.includes(i)).map((i) => i.agentId));
  const added = add.length ? (await resolveInvitees(ctx, add, plan.groupId, "add_invitees")).filter((a) => !staying.has(a.agentId)) : [];
  if (staying.size + added.length === 0) throw invalid("remove_invitees", "a plan keeps at least one invitee; cancel it with cancel_plan instead");
  return { removed, added, nextPosition: invitees.length };
}

/** Tells an invitee the plan is off for them (cancelled, or taken off it); their open invitation stops waiting. */
async function tellCancelled(tx: Tx, now: Date, actor: Actor, plan: PlanRow, to: string, reason: "cancelled" | "uninvited") {
  if (await remoteOf(tx, to)) return sendPlan(tx, now, actor, plan, [to], "plan.cancel", { reason });
  await resolveItems(tx, to, "plan.invitation", { plan_id: plan.planId });
  await deliver(tx, now, {
    to,
    type: "plan.cancelled",
    from: actor.agentId,
    summaryMd:
      reason === "cancelled" ? `@${actor.handle} cancelled the plan ${quoted(plan.title)}.` : `@${actor.handle} took you off the plan ${quoted(plan.title)}.`,
    payload: { title: untrusted(plan.title, source(actor.handle)), reason },
    refs: { plan_id: plan.planId },
  });
}

/**
 * The plan's row as the call read it: an UPDATE on this changes nothing (and guardChanged runs the call again) when
 * another call changed the plan since (chose an option, cancelled it), so a decision is never made on an old plan.
 */
const asRead = (p: PlanRow) =>
  and(
    eq(plans.planId, p.planId),
    eq(plans.state, p.state),
    sql`${plans.chosenOptionId} IS ${p.chosenOptionId}`,
    sql`${plans.respondBy} IS ${p.respondBy}`,
    eq(plans.title, p.title),
    eq(plans.description, p.description),
    eq(plans.startsAt, p.startsAt),
    eq(plans.endsAt, p.endsAt),
    eq(plans.updatedAt, p.updatedAt),
  );

export async function updatePlan(ctx: DomainContext, input: UpdateInput): Promise<Plan> {
  const { tx, now, actor } = ctx;
  const plan = await ownPlan(tx, actor, input.plan_id, "change");
  const changes: string[] = [];
  const next: PlanRow = { ...plan };
  if (input.title !== undefined && input.title !== plan.title) {
    next.title = input.title;
    changes.push("title");
  }
  if (input.description !== undefined && input.description !== plan.description) {
    next.description = input.description;
    changes.push("description");
  }
  if (input.respond_by !== undefined) {
    next.respondBy = input.respond_by === null ? null : checkRespondBy(input.respond_by, now);
    if (next.respondBy !== plan.respondBy) changes.push("respond_by");
  }
  let options = await tx.select().from(planOptions).where(eq(planOptions.planId, plan.planId)).orderBy(asc(planOptions.position));
  // Read before anything changes: those taken off are left out below, newcomers are not among them yet.
  const invited = await deliveredInvitees(tx, plan.planId);
  if (input.options !== undefined) {
    const replaced = await replaceOptions(tx, plan.planId, options, input.options);
    if (replaced) {
      options = replaced;
      changes.push("options");
    }
  }
  if (input.choose_option_id !== undefined) {
    if (!options.some((o) => o.optionId === input.choose_option_id)) throw invalid("choose_option_id", "not an option of this plan");
    if (input.choose_option_id !== plan.chosenOptionId) changes.push("chosen_option");
    next.chosenOptionId = input.choose_option_id;
    next.state = "scheduled";
  } else if (next.chosenOptionId !== null && !options.some((o) => o.optionId === next.chosenOptionId)) {
    throw invalid("options", "leaves out the chosen option; keep it (by its option_id) or choose another with choose_option_id");
  }
  const { removed, added, nextPosition } =
    input.remove_invitees || input.add_invitees
      ? await changeInvitees(ctx, plan, input.remove_invitees ?? [], input.add_invitees ?? [])
      : { removed: [], added: [], nextPosition: 0 };
  if (removed.length || added.length) changes.push("invitees");
  if (!changes.length) throw invalid("(arguments)", "nothing to change: give a field that differs from the plan as it is");

  Object.assign(next, span(options, next.chosenOptionId), { updatedAt: iso(now) });
  await tx.update(plans).set(next).where(asRead(plan));
  await guardChanged(tx, "plan as read");

  const { summaryMd, payload } = changedItem(actor, next, options, changes);
  // Those already invited hear of the change; newcomers get an invitation instead; those taken off are told so.
  const remoteInvitees: string[] = [];
  for (const i of invited.filter((x) => !removed.some((r) => r.agentId === x.agentId))) {
    if (await remoteOf(tx, i.agentId)) {
      if (!added.some((a) => a.agentId === i.agentId)) remoteInvitees.push(i.agentId);
      continue;
    }
    await deliver(tx, now, { to: i.agentId, type: "plan.changed", from: actor.agentId, summaryMd, payload, refs: { plan_id: plan.planId } });
  }
  await sendPlan(tx, now, actor, next, remoteInvitees, "plan.update", { changes }, ctx, options);
  for (const i of removed) if (i.delivered) await tellCancelled(tx, now, actor, next, i.agentId, "uninvited");
  if (added.length) await invite(tx, now, actor, next, options, added, nextPosition, ctx);
  return (await views(tx, actor.agentId, [next]))[0]!;
}

/** The plan.changed item's summary and payload. */
function changedItem(actor: Actor, next: PlanRow, options: OptionRow[], changes: string[]) {
  const src = source(actor.handle);
  const chosen = options.find((o) => o.optionId === next.chosenOptionId) ?? null;
  const summaryMd =
    changes.includes("chosen_option") && chosen
      ? `@${actor.handle} scheduled ${quoted(next.title)} for ${chosen.startsAt}${chosen.place ? ` at ${quoted(chosen.place)}` : ""}.`
      : `@${actor.handle} changed the plan ${quoted(next.title)}: ${changes.join(", ").replaceAll("_", " ")}.`;
  const payload = { title: untrusted(next.title, src), changes, state: next.state, chosen_option: chosen ? optionView(chosen, src) : null };
  return { summaryMd, payload };
}

export async function cancelPlan({ tx, now, actor }: DomainContext, planId: string): Promise<Plan> {
  const plan = await ownPlan(tx, actor, planId, "cancel");
  const next: PlanRow = { ...plan, state: "cancelled", updatedAt: iso(now) };
  await tx.update(plans).set({ state: next.state, updatedAt: next.updatedAt }).where(asRead(plan));
  await guardChanged(tx, "plan as read");
  for (const i of await deliveredInvitees(tx, planId)) await tellCancelled(tx, now, actor, plan, i.agentId, "cancelled");
  return (await views(tx, actor.agentId, [next]))[0]!;
}

/** A plan as the organiser's server sends it (server/federation/events.ts checks it against svc's schemas). */
export interface PlanCopy {
  plan_id: string;
  title: string;
  description: string;
  respond_by: string | null;
  state: PlanRow["state"];
  chosen_option_id: string | null;
  options: { option_id: string; starts_at: string; ends_at: string | null; place: string | null }[];
}

/**
 * A plan of an organiser on another server (`ctx.actor`, its local row), for local invitees: the copy here is
 * made or brought up to date, invitees who have the organiser as an accepted contact are invited or told of the
 * change or the cancellation; anything else is dropped. The organiser's server holds the plan: answers go there.
 */
export async function receivePlan(
  ctx: DomainContext,
  copy: PlanCopy,
  locals: AgentRow[],
  kind: "plan.invite" | "plan.update" | "plan.cancel",
  detail: { changes?: string[]; reason?: "cancelled" | "uninvited" } = {},
): Promise<boolean> {
  const { tx, now, actor } = ctx;
  const existing = await tx.select().from(plans).where(eq(plans.planId, copy.plan_id)).get();
  if (existing && existing.organiserId !== actor.agentId) return false;
  const welcome: AgentRow[] = [];
  for (const l of locals) if (await isAcceptedContact(tx, l.agentId, actor.agentId)) welcome.push(l);
  if (!welcome.length) return false;
  const invited = existing ? await tx.select().from(planInvitees).where(eq(planInvitees.planId, copy.plan_id)) : [];
  if (kind === "plan.cancel") {
    if (!existing) return false;
    const reason = detail.reason ?? "cancelled";
    const told = invited.filter((i) => i.delivered && welcome.some((w) => w.agentId === i.agentId));
    if (reason === "uninvited") {
      for (const i of told) await tx.delete(planInvitees).where(and(eq(planInvitees.planId, i.planId), eq(planInvitees.agentId, i.agentId)));
    } else
      await tx
        .update(plans)
        .set({ state: "cancelled", updatedAt: iso(now) })
        .where(eq(plans.planId, existing.planId));
    for (const i of told) await tellCancelled(tx, now, actor, existing, i.agentId, reason);
    return true;
  }
  if (existing?.state === "cancelled") return false;
  const options: OptionRow[] = copy.options.map((o, position) => ({
    optionId: o.option_id,
    planId: copy.plan_id,
    position,
    startsAt: stamp(o.starts_at),
    endsAt: o.ends_at === null ? null : stamp(o.ends_at),
    place: o.place,
  }));
  const chosen = copy.chosen_option_id !== null && options.some((o) => o.optionId === copy.chosen_option_id) ? copy.chosen_option_id : null;
  const row: PlanRow = {
    planId: copy.plan_id,
    organiserId: actor.agentId,
    title: copy.title,
    description: copy.description,
    groupId: null,
    respondBy: copy.respond_by === null ? null : stamp(copy.respond_by),
    state: chosen ? "scheduled" : "proposed",
    chosenOptionId: chosen,
    ...span(options, chosen),
    createdAt: existing?.createdAt ?? iso(now),
    updatedAt: iso(now),
  };
  if (existing) {
    await tx.update(plans).set(row).where(eq(plans.planId, row.planId));
    await tx.delete(planOptions).where(eq(planOptions.planId, row.planId));
  } else {
    await tx.insert(plans).values(row);
  }
  await tx.insert(planOptions).values(options);
  if (existing && kind === "plan.update" && detail.changes?.length) {
    const { summaryMd, payload } = changedItem(actor, row, options, detail.changes);
    for (const i of invited) {
      if (i.delivered) await deliver(tx, now, { to: i.agentId, type: "plan.changed", from: actor.agentId, summaryMd, payload, refs: { plan_id: row.planId } });
    }
  }
  const newcomers = welcome.filter((w) => !invited.some((i) => i.agentId === w.agentId));
  if (newcomers.length) await invite(tx, now, actor, row, options, newcomers, invited.length);
  return true;
}

/** An invitee on another server (`ctx.actor`) answered a plan organised here: taken if it is still a contact. */
export async function receivePlanResponse(ctx: DomainContext, input: { plan_id: string; response: Response; option_ids: string[] }): Promise<boolean> {
  const plan = await ctx.tx.select().from(plans).where(eq(plans.planId, input.plan_id)).get();
  if (!plan || (await remoteOf(ctx.tx, plan.organiserId)) || !(await isAcceptedContact(ctx.tx, plan.organiserId, ctx.actor.agentId))) return false;
  await respondPlan(ctx, input);
  return true;
}
