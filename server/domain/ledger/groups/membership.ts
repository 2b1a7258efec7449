// Who belongs to which group: the membership checks and member lists every other part of the ledger starts from.
import { and, eq, isNull, sql } from "drizzle-orm";
import { guard, jsonEach, jsonList, prepared, snapshotOf, type Tx } from "../../../../db/client.ts";
import { agents, groupInvites, groupMembers, groups } from "../../../../db/schema/index.ts";
import { conflict, invalid, notFound } from "../../../errors.ts";
import type { MemberRef } from "../../../contract/groups.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { refsByIds, toRef } from "../../agents.ts";
import { quoted } from "../../untrusted.ts";
import { homeOf, requireHomeHere } from "../events/home.ts";
import { followersOf } from "../events/log.ts";

export type GroupRow = typeof groups.$inferSelect;

/** The key that makes a direct ledger one per pair: both agents' ids (as this server has them), sorted. */
export const directKeyOf = (a: string, b: string) => [a, b].sort().join(":");

/**
 * A current member of a group, as the ledger names them. A placeholder member (a friend without an account yet,
 * placeholders.ts) is an agent row that is nobody: its agent id is its member_id and, having no handle, its handle
 * is that id too: a member_id (36 chars) is never a handle (3-32), so one map keys both.
 */
export interface Member {
  agentId: string;
  handle: string;
  displayName: string;
}

/** Whether a member (or share, or ref) is a placeholder: its handle is its member_id. */
export const isPlaceholder = (m: { agentId: string; handle: string }) => m.handle === m.agentId;

/** A member as every answer names one: member_id, name, and the agent, null for a placeholder (who has no handle). */
export const memberRef = (r: AgentRef): MemberRef => ({
  member_id: r.agent_id,
  name: r.display_name,
  agent: r.handle === r.agent_id ? null : r,
});

/**
 * A member as a summary or a message names them: @handle, or for a placeholder the name it was added with, quoted
 * (another member wrote it), and said to have no account: never its member_id passing for a handle.
 */
export const memberLabel = (r: AgentRef) => (r.handle === r.agent_id ? `${quoted(r.display_name)} (no account yet)` : `@${r.handle}`);

/** memberLabel of members by id, read in one query: for messages that name members the caller has only ids of. */
export async function labelsOf(tx: Tx, ids: readonly string[]): Promise<Map<string, string>> {
  const refs = await refsByIds(tx, [...ids]);
  return new Map([...refs].map(([id, r]) => [id, memberLabel(r)]));
}

/** A name as people mean it: the same letters whatever their case, accents composed, spaces collapsed. */
const plainName = (s: string) => s.normalize("NFC").replace(/\s+/g, " ").trim().toLowerCase();

/** How to name a placeholder in an argument, for messages: by its name (when no other has it) or its member_id. */
const howToName = (p: Member, unique: boolean) => `${quoted(p.displayName)} (no account yet): member_id ${p.agentId}${unique ? ", or its name" : ""}`;

/**
 * The current member an argument names, as the key of the members map: a handle (an @ and capitals forgiven), a
 * member_id, or the name a placeholder was added with when no other placeholder of the group has it. Anyone else is
 * refused at `path` (INVALID), with the group's members without an account and how to name each.
 */
export function resolveMember(members: Map<string, Member>, given: string, path: string): string {
  const found = lookupMember(members, given);
  if ("error" in found) throw invalid(path, found.error);
  return found.key;
}

/** resolveMember's lookup: the members map's key, or what to tell the caller who named no one. */
export function lookupMember(members: Map<string, Member>, given: string): { key: string } | { error: string } {
  const text = given.trim();
  const handle = text.replace(/^@/, "").toLowerCase();
  const byHandle = members.get(text) ?? members.get(handle);
  if (byHandle) return { key: byHandle.handle };
  for (const m of members.values()) if (m.agentId === handle) return { key: m.handle };
  const placeholders = [...members.values()].filter(isPlaceholder);
  const sameName = (p: Member, name: string) => plainName(p.displayName) === plainName(name);
  const named = placeholders.filter((p) => sameName(p, text));
  if (named.length === 1) return { key: named[0]!.handle };
  if (named.length > 1) {
    return {
      error: `${named.length} members without an account are named ${quoted(text)}; name one by member_id: ${named.map((p) => howToName(p, false)).join("; ")}`,
    };
  }
  const shown = /^@?[a-z0-9][a-z0-9_-]{2,31}$/i.test(text) ? `@${handle}` : quoted(text);
  const listed = placeholders.slice(0, 10).map((p) => howToName(p, placeholders.filter((q) => sameName(q, p.displayName)).length === 1));
  const more = placeholders.length > 10 ? `; and ${placeholders.length - 10} more` : "";
  const without = placeholders.length ? ` Its members without an account: ${listed.join("; ")}${more}.` : "";
  return { error: `${shown} is not a member of this group; name a member by handle or member_id (get_group lists them).${without}` };
}

/** A payer or split participant as a tool takes it: by handle (or a placeholder's name) or by member_id. */
export type MemberRefInput = { handle?: string | undefined; member_id?: string | undefined };

/**
 * Expense fields with every payer and split participant named by the key of the members map (a handle, or a
 * placeholder's member_id), as the expense store takes them.
 */
export function withMemberKeys<
  P extends MemberRefInput,
  S extends MemberRefInput,
  T extends { paid_by?: P[] | undefined; split?: { among?: S[] | undefined } | undefined },
>(
  members: Map<string, Member>,
  input: T,
): Omit<T, "paid_by" | "split"> & {
  paid_by?: (Omit<P, "member_id"> & { handle: string })[];
  split?: Omit<NonNullable<T["split"]>, "among"> & { among?: (Omit<S, "member_id"> & { handle: string })[] };
} {
  const key = <R extends MemberRefInput>({ member_id, ...rest }: R, path: string) => ({
    ...rest,
    handle: memberKey(members, { handle: rest.handle, member_id }, path),
  });
  const { paid_by, split, ...rest } = input;
  return {
    ...rest,
    ...(paid_by === undefined ? {} : { paid_by: paid_by.map((p, i) => key(p, `paid_by[${i}]`)) }),
    ...(split === undefined
      ? {}
      : { split: { ...split, ...(split.among === undefined ? {} : { among: split.among.map((p, i) => key(p, `split.among[${i}]`)) }) } as never }),
  };
}

/**
 * The member `member_id` names (an agent's member_id is its agent_id), or the one `handle` names, as the key of
 * the members map: what splits and payers that name either one are turned into before they are checked.
 */
export function memberKey(members: Map<string, Member>, ref: { handle?: string | undefined; member_id?: string | undefined }, path: string): string {
  return ref.member_id === undefined ? resolveMember(members, ref.handle!, `${path}.handle`) : keyOfMemberId(members, ref.member_id, `${path}.member_id`);
}

/** The members map's key of the current member with that member_id; anyone else is refused at `path` (INVALID). */
export function keyOfMemberId(members: Map<string, Member>, memberId: string, path: string): string {
  for (const m of members.values()) if (m.agentId === memberId) return m.handle;
  throw invalid(path, `${memberId} is not a current member of this group (get_group lists each member's member_id)`);
}

/** The current member with that key (as resolveMember gives it); anyone else is refused at `path` (INVALID). */
export function requireParticipant(members: Map<string, Member>, key: string, path: string): Member {
  return members.get(key) ?? members.get(resolveMember(members, key, path))!;
}

const groupOfMember = prepared((tx) =>
  tx
    .select({ g: groups })
    .from(groups)
    .innerJoin(groupMembers, and(eq(groupMembers.groupId, groups.groupId), eq(groupMembers.agentId, sql.placeholder("agentId")), isNull(groupMembers.leftAt)))
    .where(eq(groups.groupId, sql.placeholder("groupId")))
    .prepare(),
);

/** The group if `agentId` is a current member, else undefined. */
export async function memberGroup(tx: Tx, groupId: string, agentId: string): Promise<GroupRow | undefined> {
  return (await groupOfMember(tx).get({ groupId, agentId }))?.g;
}

/** The group if `agentId` is a current member; anyone else learns nothing (NOT_FOUND). */
export async function requireMember(tx: Tx, groupId: string, agentId: string): Promise<GroupRow> {
  const g = await memberGroup(tx, groupId, agentId);
  if (!g) throw notFound("Group");
  return g;
}

/**
 * Guards a write call's batch with what writing to the group needs: the caller still a member, the group not
 * archived, when the batch commits (a member removed, or a group archived, at the same moment writes nothing there).
 */
export async function guardWritable(tx: Tx, groupId: string, agentId: string): Promise<void> {
  await requireHomeHere(tx, groupId);
  await guard(
    tx,
    "group member",
    sql`EXISTS (SELECT 1 FROM ${groupMembers} JOIN ${groups} ON ${groups.groupId} = ${groupMembers.groupId} WHERE ${groupMembers.groupId} = ${groupId} AND ${groupMembers.agentId} = ${agentId} AND ${groupMembers.leftAt} IS NULL AND ${groups.archived} = 0)`,
  );
}

/** The group itself, if it accepts changes (not archived). */
export function assertWritable(g: GroupRow): GroupRow {
  if (g.archived) throw conflict("The group is archived and read-only; unarchive it with archive_group first.");
  return g;
}

/** As requireMember, and the group must accept changes (not archived). */
export async function requireWritable(tx: Tx, groupId: string, agentId: string): Promise<GroupRow> {
  const g = assertWritable(await requireMember(tx, groupId, agentId));
  await guardWritable(tx, groupId, agentId);
  return g;
}

// The group and its current members, each read by key: read together, every member's row would repeat the group's.
const groupById = prepared((tx) =>
  tx
    .select()
    .from(groups)
    .where(eq(groups.groupId, sql.placeholder("groupId")))
    .prepare(),
);
const currentMembers = prepared((tx) =>
  tx
    .select({ agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
    .from(groupMembers)
    .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
    .where(and(eq(groupMembers.groupId, sql.placeholder("groupId")), isNull(groupMembers.leftAt)))
    .prepare(),
);

/** Current members of a group by handle. */
export async function membersByHandle(tx: Tx, groupId: string): Promise<Map<string, Member>> {
  const rows = await currentMembers(tx).all({ groupId });
  return new Map(rows.map((r) => [r.handle, r]));
}

/**
 * As requireMember, with the group's current members by handle: what a call that names members (an expense,
 * a payment, balances) reads first.
 */
export async function groupWithMembers(tx: Tx, groupId: string, agentId: string): Promise<{ group: GroupRow; members: Map<string, Member> }> {
  // Asked together (on a remote primary, one round trip); the group is shown only to a member.
  const [rows, group] = await Promise.all([currentMembers(tx).all({ groupId }), groupById(tx).get({ groupId })]);
  if (!rows.some((r) => r.agentId === agentId) || !group) throw notFound("Group");
  return { group, members: new Map(rows.map((r) => [r.handle, r])) };
}

/** As groupWithMembers, and the group must accept changes (not archived). */
export async function writableGroupMembers(tx: Tx, groupId: string, agentId: string): Promise<{ group: GroupRow; members: Map<string, Member> }> {
  // Beside the group (one round trip on a remote primary): whether it is a copy, and who follows its events.
  const [found] = await Promise.all([groupWithMembers(tx, groupId, agentId), homeOf(tx, groupId), followersOf(tx, groupId)]);
  assertWritable(found.group);
  await guardWritable(tx, groupId, agentId);
  return found;
}

/** Members as agent refs by agent id, for the views and items that name them. */
export const refsOfMembers = (members: Map<string, Member>): Map<string, AgentRef> => new Map([...members.values()].map((m) => [m.agentId, toRef(m)]));

/** Refs of `ids`: those in `known` as they are, only the others read. */
export async function refsWithKnown(tx: Tx, ids: string[], known: Map<string, AgentRef>): Promise<Map<string, AgentRef>> {
  const missing = ids.filter((id) => !known.has(id));
  return missing.length ? new Map([...known, ...(await refsByIds(tx, missing))]) : known;
}

// The groups bound as one value: an agent's groups have no bound.
const membersOfGroups = prepared((tx) =>
  tx
    .select({ groupId: groupMembers.groupId, agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
    .from(groupMembers)
    .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
    .where(and(sql`${groupMembers.groupId} IN (SELECT value FROM ${jsonEach("groups")})`, isNull(groupMembers.leftAt)))
    .prepare(),
);

/** Current members of each of the groups, as agent refs by agent id, in one query. */
export async function memberRefsByGroup(tx: Tx, groupIds: readonly string[]): Promise<Map<string, Map<string, AgentRef>>> {
  const byGroup = new Map(groupIds.map((id) => [id, new Map<string, AgentRef>()]));
  if (!groupIds.length) return byGroup;
  const rows = await membersOfGroups(tx).all({ groups: jsonList([...byGroup.keys()]) });
  for (const r of rows) byGroup.get(r.groupId)!.set(r.agentId, toRef(r));
  return byGroup;
}

/** As the call read it: a call that adds or removes a member does so after asking (its own rows are not read back). */
export async function isMember(tx: Tx, groupId: string, agentId: string): Promise<boolean> {
  const row = await snapshotOf(tx)
    .select({ a: groupMembers.agentId })
    .from(groupMembers)
    .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)))
    .get();
  return row !== undefined;
}

/** Whether both agents are current members of the group. */
export async function sharesGroup(tx: Tx, a: string, b: string, groupId: string): Promise<boolean> {
  return (await isMember(tx, groupId, a)) && (await isMember(tx, groupId, b));
}

const pendingInvites = prepared((tx) =>
  tx
    .select({ n: sql<number>`count(*)` })
    .from(groupInvites)
    .where(and(eq(groupInvites.targetId, sql.placeholder("agentId")), eq(groupInvites.state, "pending")))
    .prepare(),
);

/** Targeted group invitations waiting for the caller's answer. */
export async function pendingInvitesCount(tx: Tx, agentId: string): Promise<number> {
  return Number((await pendingInvites(tx).get({ agentId }))?.n ?? 0);
}
