// Group invitations: targeted ones (one named agent answers) and shareable codes (anyone holding one joins).
import { and, eq, gt, lt, sql } from "drizzle-orm";
import { randomInt } from "node:crypto";
import { guardChanged, scalar, snapshotOf, type Tx } from "../../../../db/client.ts";
import { groupInvites, groups } from "../../../../db/schema/index.ts";
import { DAY, iso, later } from "../../../clock.ts";
import { conflict, invalid, notFound } from "../../../errors.ts";
import type { Invite } from "../../../contract/groups.ts";
import { agentByHandle, agentById, refsByIds, toRef, type AgentRow } from "../../agents.ts";
import { isAcceptedContact } from "../../contacts.ts";
import { deliver, hasBlocked, ITEM_LIFETIME_MS, resolveItems } from "../../inbox.ts";
import { quoted } from "../../untrusted.ts";
import { addMember, notifyJoined, untrustedName } from "./groups.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import { quotasOf, requireRoomForGroup } from "../../quotas.ts";
import { isMember, requireWritable, type GroupRow } from "./membership.ts";
import { logActivity } from "./activity.ts";
import { enqueue, remoteOf } from "../../federation.ts";
import { memberData } from "../events/members.ts";
import { chainFromStart } from "../events/log.ts";
import { addPlaceholder, claimPlaceholder, isClaimCode, renewPlaceholderLink } from "./placeholders.ts";

type InviteRow = typeof groupInvites.$inferSelect;

export const CODE_DEFAULT_LIFETIME_MS = 7 * DAY;
export const CODE_MAX_LIFETIME_MS = 365 * DAY;
export const CODE_DEFAULT_MAX_USES = 10;
/** 31 letters and digits without look-alikes (0/o, 1/l/i): 16 characters carry about 79 bits. */
const CODE_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";
const CODE_LENGTH = 16;

const newCode = () => Array.from({ length: CODE_LENGTH }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join("");
/** Codes are handed around by people: case and surrounding blanks do not matter. */
const normaliseCode = (code: string) => code.trim().toLowerCase();

async function toInvite(tx: Tx, row: InviteRow): Promise<Invite> {
  const refs = await refsByIds(tx, row.targetId ? [row.createdBy, row.targetId] : [row.createdBy]);
  return {
    invite_id: row.inviteId,
    group_id: row.groupId,
    kind: row.code === null ? "targeted" : "code",
    invitee: row.targetId ? refs.get(row.targetId)! : null,
    invited_by: refs.get(row.createdBy)!,
    code: row.code,
    state: row.state,
    max_uses: row.maxUses,
    uses: row.uses,
    created_at: row.createdAt,
    expires_at: row.expiresAt,
    responded_at: row.respondedAt,
  };
}

/**
 * Whom `inviter` may invite by handle: an accepted contact, or (when `fellowMembers`) someone who shares
 * another group with them. Unknown handles are NOT_FOUND; known but unrelated agents are a CONFLICT.
 */
export async function resolveInvitee({ tx, actor }: DomainContext, handle: string, groupId: string | null, fellowMembers: boolean): Promise<AgentRow> {
  const them = await agentByHandle(tx, handle);
  if (!them) throw notFound(`Agent @${handle}`);
  if (them.agentId === actor.agentId) throw conflict("You cannot invite yourself.", { handle });
  if (await isAcceptedContact(tx, actor.agentId, them.agentId)) return them;
  if (fellowMembers && (await sharesAnotherGroup(tx, actor.agentId, them.agentId, groupId))) return them;
  const allowed = fellowMembers ? "your accepted contacts or members of another group you belong to" : "your accepted contacts";
  throw conflict(`@${them.handle} cannot be invited: only ${allowed} can be; add them as a contact first (add_contact).`, { handle });
}

async function sharesAnotherGroup(tx: Tx, a: string, b: string, exceptGroupId: string | null): Promise<boolean> {
  return Boolean(
    await scalar(
      tx,
      sql`SELECT EXISTS (
        SELECT 1 FROM group_members x JOIN group_members y ON y.group_id = x.group_id
         WHERE x.agent_id = ${a} AND y.agent_id = ${b} AND x.left_at IS NULL AND y.left_at IS NULL
           AND x.group_id <> ${exceptGroupId ?? ""})`,
    ),
  );
}

/**
 * A targeted invitation, with a `group.invitation` item in the invitee's inbox. An invitee who blocked the
 * inviter hears nothing and the invitation is stored revoked (unusable), while the inviter is answered as usual.
 */
export async function inviteAgent(ctx: DomainContext, g: GroupRow, them: AgentRow): Promise<Invite> {
  const { tx, now, actor } = ctx;
  // An agent of another server is invited on its own server (it decides there, as for a contact request); the group's
  // truth stays here, and its server keeps a copy once it joins (events/log.ts).
  const remote = await remoteOf(tx, them.agentId);
  if (remote) await chainFromStart(tx, g.groupId);
  if (await isMember(tx, g.groupId, them.agentId)) throw conflict(`@${them.handle} is already a member of this group.`, { handle: them.handle });
  const blocked = await hasBlocked(tx, them.agentId, actor.agentId);
  // Asking again returns the open invitation: the usable one, or while blocked the unusable one, alike. By its key, as
  // the call read it (create_group invites several).
  const open = await snapshotOf(tx)
    .select()
    .from(groupInvites)
    .where(
      and(
        eq(groupInvites.groupId, g.groupId),
        eq(groupInvites.targetId, them.agentId),
        eq(groupInvites.state, blocked ? "revoked" : "pending"),
        gt(groupInvites.expiresAt, iso(now)),
      ),
    )
    .get();
  if (open) return toInvite(tx, { ...open, state: "pending" });
  const row: InviteRow = {
    inviteId: crypto.randomUUID(),
    groupId: g.groupId,
    createdBy: actor.agentId,
    targetId: them.agentId,
    code: null,
    maxUses: 1,
    uses: 0,
    state: blocked ? "revoked" : "pending",
    createdAt: iso(now),
    expiresAt: later(now, ITEM_LIFETIME_MS),
    respondedAt: null,
  };
  await tx.insert(groupInvites).values(row);
  if (remote) {
    await enqueue(
      tx,
      now,
      remote.host,
      {
        type: "group.invite",
        from: actor.agentId,
        to: remote.address,
        invite_id: row.inviteId,
        group_id: g.groupId,
        group_name: g.name,
        currency: g.currency,
        expires_at: row.expiresAt,
      },
      ctx,
    );
  } else if (!blocked) {
    const members = await scalar<number>(tx, sql`SELECT COUNT(*) FROM group_members WHERE group_id = ${g.groupId} AND left_at IS NULL`);
    await deliver(tx, now, {
      to: them.agentId,
      type: "group.invitation",
      from: actor.agentId,
      summaryMd: `@${actor.handle} invites you to the group ${quoted(g.name)} (${g.currency}). Ask your human before accepting.`,
      payload: {
        group_id: g.groupId,
        group_name: untrustedName(g),
        currency: g.currency,
        member_count: Number(members ?? 0),
        inviter: actor.handle,
        invite_id: row.inviteId,
        expires_at: row.expiresAt,
      },
      refs: { group_id: g.groupId, invite_id: row.inviteId },
    });
  }
  await logActivity(tx, now, {
    groupId: g.groupId,
    actorId: actor.agentId,
    action: "invite_created",
    summary: `@${actor.handle} invited @${them.handle}`,
    refs: { invite_id: row.inviteId, agent_id: them.agentId },
  });
  return toInvite(tx, { ...row, state: "pending" });
}

/** create_group's `members`: each must be an accepted contact (all are checked before anyone is invited). */
export async function inviteContacts(ctx: DomainContext, g: GroupRow, handles: string[]): Promise<Invite[]> {
  const invitees: AgentRow[] = [];
  for (const handle of new Set(handles)) invitees.push(await resolveInvitee(ctx, handle, g.groupId, false));
  const invites: Invite[] = [];
  for (const them of invitees) invites.push(await inviteAgent(ctx, g, them));
  return invites;
}

export interface CreateInviteInput {
  group_id: string;
  handle?: string | undefined;
  /** A friend without an account: added as a placeholder member with a one-time claim link. */
  name?: string | undefined;
  /** A placeholder nobody has claimed: a new claim link, the old one ended. */
  member_id?: string | undefined;
  max_uses?: number | undefined;
  expires_at?: string | undefined;
}

/** create_group_invite: a targeted invitation with `handle`, else a shareable code. */
export async function createInvite(ctx: DomainContext, input: CreateInviteInput, baseUrl = ""): Promise<{ invite: Invite; message: string }> {
  const { tx, now, actor } = ctx;
  if (input.name !== undefined) return addPlaceholder(ctx, input.group_id, input.name, baseUrl);
  if (input.member_id !== undefined) return renewPlaceholderLink(ctx, input.group_id, input.member_id, baseUrl);
  const g = await requireWritable(tx, input.group_id, actor.agentId);
  if (g.kind === "direct") throw conflict("A direct ledger is between two people; create a group (create_group) to share costs with more.");
  if (input.handle !== undefined) {
    const them = await resolveInvitee(ctx, input.handle, g.groupId, true);
    const invite = await inviteAgent(ctx, g, them);
    return { invite, message: `@${them.handle} has been invited; they answer with respond_group_invite.` };
  }
  const expiresAt = input.expires_at === undefined ? later(now, CODE_DEFAULT_LIFETIME_MS) : codeExpiry(input.expires_at, now);
  const row: InviteRow = {
    inviteId: crypto.randomUUID(),
    groupId: g.groupId,
    createdBy: actor.agentId,
    targetId: null,
    code: newCode(),
    maxUses: input.max_uses ?? CODE_DEFAULT_MAX_USES,
    uses: 0,
    state: "pending",
    createdAt: iso(now),
    expiresAt,
    respondedAt: null,
  };
  await tx.insert(groupInvites).values(row);
  await logActivity(tx, now, {
    groupId: g.groupId,
    actorId: actor.agentId,
    action: "invite_created",
    summary: `@${actor.handle} created an invite code for up to ${row.maxUses} people`,
    refs: { invite_id: row.inviteId },
  });
  return {
    invite: await toInvite(tx, row),
    message: `Join my group on svc with the invite code ${row.code} (join_group, or register_agent with invite_code). It works for ${row.maxUses} ${row.maxUses === 1 ? "person" : "people"} until ${expiresAt}.`,
  };
}

function codeExpiry(text: string, now: Date): string {
  const at = Date.parse(text);
  if (at <= now.getTime()) throw invalid("expires_at", "must be in the future");
  if (at > now.getTime() + CODE_MAX_LIFETIME_MS) throw invalid("expires_at", "must be at most 365 days ahead");
  return iso(new Date(at));
}

/** Marks the agent's other open invitations to a group they just joined as accepted and resolves their items. */
async function settleOpenInvites(tx: Tx, groupId: string, agentId: string, now: Date): Promise<void> {
  await tx
    .update(groupInvites)
    .set({ state: "accepted", respondedAt: iso(now) })
    .where(and(eq(groupInvites.groupId, groupId), eq(groupInvites.targetId, agentId), eq(groupInvites.state, "pending")));
  await resolveItems(tx, agentId, "group.invitation", { group_id: groupId });
}

async function join(
  tx: Tx,
  g: GroupRow,
  agentId: string,
  via: "invitation" | "code",
  inviteId: string,
  now: Date,
  maxGroups: number,
  self?: Pick<AgentRow, "agentId" | "handle" | "displayName">,
): Promise<boolean> {
  if (!(await isMember(tx, g.groupId, agentId))) await requireRoomForGroup(tx, agentId, maxGroups);
  const joined = await addMember(tx, now, g.groupId, agentId, "member");
  await settleOpenInvites(tx, g.groupId, agentId, now);
  if (!joined) return false;
  // As the call read it (register_agent joins the agent it is creating: then as it is being written).
  const me = toRef((await agentById(snapshotOf(tx), agentId)) ?? self!);
  await notifyJoined(tx, now, g, me, via);
  await logActivity(tx, now, {
    groupId: g.groupId,
    actorId: agentId,
    action: "member_joined",
    summary: `@${me.handle} joined the group${via === "code" ? " with an invite code" : ""}`,
    refs: { invite_id: inviteId, agent_id: agentId },
    data: { member: await memberData(tx, me, "member") },
  });
  return true;
}

const groupRow = async (tx: Tx, groupId: string) => (await tx.select().from(groups).where(eq(groups.groupId, groupId)).get())!;

/** respond_group_invite: the invitee accepts (joins) or declines; either resolves the inbox item. */
export async function respondInvite(ctx: DomainContext, inviteId: string, action: "accept" | "decline") {
  const { tx, now, actor } = ctx;
  const row = await tx
    .select()
    .from(groupInvites)
    .where(and(eq(groupInvites.inviteId, inviteId), eq(groupInvites.targetId, actor.agentId), sql`${groupInvites.state} <> 'revoked'`))
    .get();
  if (!row) throw notFound("Invitation");
  if (row.state !== "pending") throw conflict(`You already ${row.state} this invitation.`, { state: row.state });
  if (row.expiresAt <= iso(now)) throw conflict(`This invitation expired at ${row.expiresAt}; ask for a new one.`);
  const g = await groupRow(tx, row.groupId);
  if (action === "accept" && g.archived) throw conflict("The group is archived and read-only; ask a member to unarchive it first.");
  // The state check in the update is the gate: of several concurrent answers exactly one changes the row, and the
  // others run again to find it answered.
  const answered = { state: action === "accept" ? ("accepted" as const) : ("declined" as const), respondedAt: iso(now) };
  await tx
    .update(groupInvites)
    .set(answered)
    .where(and(eq(groupInvites.inviteId, inviteId), eq(groupInvites.state, "pending")));
  await guardChanged(tx, "invitation answer");
  await resolveItems(tx, actor.agentId, "group.invitation", { invite_id: inviteId });
  if (action === "accept") {
    await join(tx, g, actor.agentId, "invitation", inviteId, now, quotasOf(ctx).groups);
  } else {
    await logActivity(tx, now, {
      groupId: g.groupId,
      actorId: actor.agentId,
      action: "invite_declined",
      summary: `@${actor.handle} declined the invitation`,
      refs: { invite_id: inviteId },
    });
  }
  return { invite: await toInvite(tx, { ...row, ...answered }), groupId: g.groupId };
}

/**
 * Joins the group of a shareable invite code (join_group, register_agent, join_network). A member already
 * in the group uses up nothing and gets `joined: false`.
 */
export async function joinByCode(ctx: DomainContext, code: string): Promise<{ groupId: string; joined: boolean }> {
  const { tx, now } = ctx;
  const { agentId } = ctx.actor;
  if (isClaimCode(code)) return { ...(await claimPlaceholder(ctx, code)), joined: true };
  const row = await tx
    .select()
    .from(groupInvites)
    .where(and(eq(groupInvites.code, normaliseCode(code)), eq(groupInvites.state, "pending")))
    .get();
  if (!row) throw notFound("Invite code (no group has it; ask for a fresh one)");
  const g = await groupRow(tx, row.groupId);
  if (await isMember(tx, g.groupId, agentId)) return { groupId: g.groupId, joined: false };
  if (await remoteOf(tx, agentId)) await chainFromStart(tx, g.groupId);
  if (g.archived) throw conflict("The group is archived and read-only; ask a member to unarchive it first.");
  if (row.expiresAt <= iso(now)) throw conflict(`This invite code expired at ${row.expiresAt}; ask for a new one.`);
  if (row.uses >= row.maxUses) throw conflict(`This invite code has been used its maximum of ${row.maxUses} times; ask for a new one.`);
  // Counting a use only while one is left keeps max_uses exact however many join at once: the last use taken twice
  // at once runs again, and is refused.
  await tx
    .update(groupInvites)
    .set({ uses: sql`${groupInvites.uses} + 1` })
    .where(and(eq(groupInvites.inviteId, row.inviteId), lt(groupInvites.uses, groupInvites.maxUses)));
  await guardChanged(tx, "invite code use");
  const self = { agentId, handle: ctx.actor.handle, displayName: "displayName" in ctx.actor ? String(ctx.actor.displayName) : ctx.actor.handle };
  await join(tx, g, agentId, "code", row.inviteId, now, quotasOf(ctx).groups, self);
  return { groupId: g.groupId, joined: true };
}
