// Groups: creating, reading, changing, archiving, leaving, removing members, and direct ledgers.
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { guard, guardChanged, scalar, snapshotOf, type Tx } from "../../../../db/client.ts";
import { agents, groupMembers, groupPlaceholders, groups } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { AppError, conflict, notFound } from "../../../errors.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import { quotasOf, requireRoomForGroup } from "../../quotas.ts";
import type { Group } from "../../../contract/groups.ts";
import type { AgentRef, GroupSummary } from "../../../contract/wire.ts";
import { agentById, refsByIds, toRef } from "../../agents.ts";
import { groupData, memberData } from "../events/members.ts";
import { requireHomeHere } from "../events/home.ts";
import { deliver } from "../../inbox.ts";
import { quoted, untrusted } from "../../untrusted.ts";
import { markBuilt } from "../balances/pairs.ts";
import { isPlaceholder, lookupMember, membersByHandle, requireMember, requireWritable, type GroupRow } from "./membership.ts";
import { logActivity } from "./activity.ts";
import { groupBalances, groupSummaries } from "../balances/balances.ts";
import { formatBalance, totalMinor } from "../money/amounts.ts";
import { decodeCursor, encodeCursor, paginate } from "../../../contract/cursor.ts";

/** The group as a member sees it: summary, settings, current members with their balances. */
export async function groupView(tx: Tx, groupId: string, viewerId: string): Promise<Group> {
  const g = (await tx.select().from(groups).where(eq(groups.groupId, groupId)).get())!;
  const rows = await tx
    .select({ m: groupMembers, agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
    .from(groupMembers)
    .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
    .where(and(eq(groupMembers.groupId, groupId), isNull(groupMembers.leftAt)))
    .orderBy(asc(groupMembers.joinedAt), asc(agents.handle));
  const balances = await groupBalances(tx, groupId);
  const creator = (await refsByIds(tx, [g.createdBy])).get(g.createdBy)!;
  const mine = balances.get(viewerId) ?? 0n;
  return {
    group_id: g.groupId,
    name: g.name,
    currency: g.currency,
    kind: g.kind,
    archived: g.archived,
    member_count: rows.length,
    my_balance_minor: totalMinor(mine),
    my_balance: formatBalance(mine, g.currency),
    created_by: creator,
    created_at: g.createdAt,
    updated_at: g.updatedAt,
    settings: {
      simplify_debts: g.simplifyDebts,
      description: g.description === null ? null : untrusted(g.description, "group description, written by the group's members"),
    },
    members: rows.map((r) => {
      const b = balances.get(r.agentId) ?? 0n;
      return {
        // A placeholder (no account yet) is nobody: no agent, its name and member_id only.
        agent: isPlaceholder(r) ? null : toRef(r),
        member_id: r.agentId,
        name: r.displayName,
        role: r.m.role,
        joined_at: r.m.joinedAt,
        balance_minor: totalMinor(b),
        balance: formatBalance(b, g.currency),
      };
    }),
  };
}

/** The Group summary fields of a group view (register and join answers). */
export const toSummary = (g: Group): GroupSummary => ({
  group_id: g.group_id,
  name: g.name,
  currency: g.currency,
  kind: g.kind,
  archived: g.archived,
  member_count: g.member_count,
  my_balance_minor: g.my_balance_minor,
  my_balance: g.my_balance,
});

/** A group's name is written by its members: to anyone else reading it, it is data. */
export const untrustedName = (g: GroupRow) => untrusted(g.name, "group name, written by the group's members");

/**
 * Makes `agentId` a current member (a former member rejoins with a fresh joined_at).
 * Returns false when they already were one.
 */
export async function addMember(tx: Tx, now: Date, groupId: string, agentId: string, role: "owner" | "member"): Promise<boolean> {
  // By its key, as the call read it: the call may have added another member already.
  const row = await snapshotOf(tx)
    .select()
    .from(groupMembers)
    .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, agentId)))
    .get();
  if (row && row.leftAt === null) return false;
  const values = { groupId, agentId, role, joinedAt: iso(now), leftAt: null };
  await tx
    .insert(groupMembers)
    .values(values)
    .onConflictDoUpdate({ target: [groupMembers.groupId, groupMembers.agentId], set: values });
  return true;
}

/** Tells the other members that someone joined (a ledger item: it reaches members who blocked the joiner, as shared groups do). */
export async function notifyJoined(tx: Tx, now: Date, g: GroupRow, joiner: AgentRef, via: "invitation" | "code"): Promise<void> {
  // The members before the joiner, as the call read them (it has just added the joiner).
  const others = await snapshotOf(tx)
    .select({ agentId: groupMembers.agentId })
    .from(groupMembers)
    // placeholders (handle = agent id) have no inbox
    .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
    .where(
      and(
        eq(groupMembers.groupId, g.groupId),
        isNull(groupMembers.leftAt),
        sql`${groupMembers.agentId} <> ${joiner.agent_id}`,
        sql`${agents.handle} <> ${agents.agentId}`,
      ),
    );
  for (const o of others) {
    await deliver(tx, now, {
      to: o.agentId,
      type: "group.member_joined",
      from: joiner.agent_id,
      summaryMd: `@${joiner.handle} joined the group ${quoted(g.name)}.`,
      payload: { group_id: g.groupId, group_name: untrustedName(g), currency: g.currency, member: joiner, via },
      refs: { group_id: g.groupId, agent_id: joiner.agent_id },
    });
  }
}

export interface CreateGroupInput {
  name: string;
  currency: string;
  description?: string | undefined;
}

export async function createGroup(ctx: DomainContext, input: CreateGroupInput): Promise<GroupRow> {
  const group = { name: input.name, description: input.description || null, currency: input.currency, kind: "group" as const, directKey: null };
  return newGroup(ctx, group, `@${ctx.actor.handle} created the group`);
}

/**
 * A new group or direct ledger with the caller as its owner, within the caller's groups quota; its first event says
 * what a member's server builds its copy from.
 */
export async function newGroup(
  ctx: DomainContext,
  g: Pick<GroupRow, "name" | "description" | "currency" | "kind" | "directKey">,
  summary: string,
): Promise<GroupRow> {
  const { tx, now, actor } = ctx;
  await requireRoomForGroup(tx, actor.agentId, quotasOf(ctx).groups);
  const row: GroupRow = {
    groupId: crypto.randomUUID(),
    ...g,
    simplifyDebts: true,
    archived: false,
    createdBy: actor.agentId,
    createdAt: iso(now),
    updatedAt: iso(now),
  };
  await tx.insert(groups).values(row);
  await markBuilt(tx, now, row.groupId);
  await addMember(tx, now, row.groupId, actor.agentId, "owner");
  await logActivity(tx, now, {
    groupId: row.groupId,
    actorId: actor.agentId,
    action: "group_created",
    summary,
    data: { group: groupData(row), member: await memberData(tx, { agent_id: actor.agentId, handle: actor.handle, display_name: null }, "owner") },
  });
  return row;
}

export async function listGroups(ctx: DomainContext, includeArchived: boolean, limit: number, cursor?: string) {
  const afterGroupId = cursor === undefined ? undefined : decodeCursor(cursor, ["string"])[0];
  const { page, next_cursor } = await paginate(
    limit,
    (n) => groupSummaries(ctx, includeArchived, { afterGroupId, limit: n }),
    (last) => encodeCursor([last.group_id]),
  );
  return { groups: page, next_cursor };
}

export interface UpdateGroupInput {
  group_id: string;
  name?: string | undefined;
  description?: string | undefined;
  simplify_debts?: boolean | undefined;
  currency?: string | undefined;
}

/** Changes a group's name, description, simplify_debts or currency; the currency only while nothing is booked in it. */
export async function updateGroup({ tx, now, actor }: DomainContext, input: UpdateGroupInput): Promise<void> {
  const g = await requireWritable(tx, input.group_id, actor.agentId);
  const set: Partial<GroupRow> = {};
  if (input.name !== undefined && input.name !== g.name) set.name = input.name;
  if (input.description !== undefined && (input.description || null) !== g.description) set.description = input.description || null;
  if (input.simplify_debts !== undefined && input.simplify_debts !== g.simplifyDebts) set.simplifyDebts = input.simplify_debts;
  if (input.currency !== undefined && input.currency !== g.currency) {
    // Amounts are stored in the group's minor units: re-labelling them would change what everyone owes.
    if (await hasBookings(tx, g.groupId)) {
      throw conflict(`The currency is fixed at ${g.currency} once the group has expenses or payments; create a new group for ${input.currency}.`, {
        currency: g.currency,
      });
    }
    set.currency = input.currency;
  }
  const changed = Object.keys(set);
  if (!changed.length) return;
  await tx
    .update(groups)
    .set({ ...set, updatedAt: iso(now) })
    .where(eq(groups.groupId, g.groupId));
  const what = changed.map((k) => (k === "simplifyDebts" ? "simplify_debts" : k)).join(", ");
  await logActivity(tx, now, {
    groupId: g.groupId,
    actorId: actor.agentId,
    action: "group_updated",
    summary: `@${actor.handle} changed ${what}`,
    data: { group: groupData({ ...g, ...set }) },
  });
}

/** Whether any expense (deleted ones too: they can be restored) or payment is booked in the group. */
async function hasBookings(tx: Tx, groupId: string): Promise<boolean> {
  return Boolean(
    await scalar(tx, sql`SELECT EXISTS (SELECT 1 FROM expenses WHERE group_id = ${groupId}) OR EXISTS (SELECT 1 FROM payments WHERE group_id = ${groupId})`),
  );
}

/** Archives (read-only) or unarchives a group; any member may, and it works on an archived group by design. */
export async function archiveGroup({ tx, now, actor }: DomainContext, groupId: string, archived: boolean): Promise<void> {
  const g = await requireMember(tx, groupId, actor.agentId);
  await requireHomeHere(tx, groupId);
  if (g.archived === archived) return;
  await tx
    .update(groups)
    .set({ archived, updatedAt: iso(now) })
    .where(eq(groups.groupId, groupId));
  await logActivity(tx, now, {
    groupId,
    actorId: actor.agentId,
    action: archived ? "group_archived" : "group_unarchived",
    summary: `@${actor.handle} ${archived ? "archived" : "unarchived"} the group`,
    data: { group: groupData({ ...g, archived }) },
  });
}

/** Leaving or being removed needs a zero balance, else a CONFLICT that names it. */
async function requireZeroBalance(tx: Tx, g: GroupRow, agentId: string, whose: string): Promise<void> {
  const b = (await groupBalances(tx, g.groupId)).get(agentId) ?? 0n;
  if (b === 0n) {
    // Zero when the batch commits too: an expense or payment committed since the call read it fails the guard.
    const stored = sql`(SELECT balance_minor FROM group_balances WHERE group_id = ${g.groupId} AND agent_id = ${agentId})`;
    return guard(tx, "balance zero", sql`coalesce(${stored}, 0) = 0`);
  }
  const balance = formatBalance(b, g.currency);
  throw conflict(`${whose} balance in this group is ${balance}; it must be zero first (settle up with record_payment).`, {
    balance_minor: totalMinor(b),
    balance,
  });
}

function requireSharedGroup(g: GroupRow): void {
  if (g.kind === "direct") throw conflict("A direct ledger always has its two people; archive it with archive_group instead.");
}

async function membership(tx: Tx, groupId: string, agentId: string) {
  return tx
    .select()
    .from(groupMembers)
    .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)))
    .get();
}

async function markLeft(tx: Tx, groupId: string, agentId: string, now: Date): Promise<void> {
  await tx
    .update(groupMembers)
    .set({ leftAt: iso(now) })
    .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)));
  // Left once: a call that read them a member after they left (removed at the same moment) runs again.
  await guardChanged(tx, "left once");
}

export async function leaveGroup({ tx, now, actor }: DomainContext, groupId: string): Promise<void> {
  const g = await requireWritable(tx, groupId, actor.agentId);
  requireSharedGroup(g);
  await requireZeroBalance(tx, g, actor.agentId, "Your");
  const mine = (await membership(tx, groupId, actor.agentId))!;
  // Someone must be able to remove members: the longest-standing member takes over from an owner who leaves.
  const next =
    mine.role === "owner"
      ? await tx
          .select({ agentId: groupMembers.agentId })
          .from(groupMembers)
          .where(and(eq(groupMembers.groupId, groupId), isNull(groupMembers.leftAt), sql`${groupMembers.agentId} <> ${actor.agentId}`))
          .orderBy(asc(groupMembers.joinedAt), sql`rowid`)
          .get()
      : undefined;
  await markLeft(tx, groupId, actor.agentId, now);
  if (next) {
    await tx
      .update(groupMembers)
      .set({ role: "owner" })
      .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, next.agentId)));
  }
  await logActivity(tx, now, {
    groupId,
    actorId: actor.agentId,
    action: "member_left",
    summary: `@${actor.handle} left the group`,
    data: { left: actor.agentId, owner: next?.agentId ?? null },
  });
}

export async function removeMember(
  { tx, now, actor }: DomainContext,
  groupId: string,
  who: { handle?: string | undefined; memberId?: string | undefined },
): Promise<void> {
  const g = await requireWritable(tx, groupId, actor.agentId);
  requireSharedGroup(g);
  if ((await membership(tx, groupId, actor.agentId))?.role !== "owner") {
    throw new AppError(
      "FORBIDDEN",
      "Only the group's owner can remove members.",
      undefined,
      undefined,
      "Ask the owner (get_group shows who it is), or leave the group yourself with leave_group.",
    );
  }
  // By handle, or a placeholder's name, among the current members (a stranger is no member to remove).
  let them = who.memberId !== undefined ? await agentById(tx, who.memberId) : undefined;
  if (who.handle !== undefined) {
    const members = await membersByHandle(tx, groupId);
    const found = lookupMember(members, who.handle);
    if ("error" in found) throw new AppError("NOT_FOUND", found.error);
    them = await agentById(tx, members.get(found.key)!.agentId);
  }
  if (!them || !(await membership(tx, groupId, them.agentId))) throw notFound("Member");
  if (them.agentId === actor.agentId) throw conflict("You cannot remove yourself; use leave_group.");
  const placeholder = isPlaceholder(them);
  await requireZeroBalance(tx, g, them.agentId, placeholder ? `${quoted(them.displayName)}'s` : `@${them.handle}'s`);
  await markLeft(tx, groupId, them.agentId, now);
  // A placeholder removed can no longer be claimed.
  if (placeholder) await tx.update(groupPlaceholders).set({ claimHash: null }).where(eq(groupPlaceholders.memberId, them.agentId));
  await logActivity(tx, now, {
    groupId,
    actorId: actor.agentId,
    action: "member_removed",
    summary: `@${actor.handle} removed ${placeholder ? quoted(them.displayName) : `@${them.handle}`}`,
    refs: { agent_id: them.agentId },
    data: { left: them.agentId, owner: null },
  });
}
