// Invitations to a group whose home is another server, on the invitee's server: the invitation arrives as an event
// (kept only as the invitee's inbox item, which names the home), and the answer goes back to the home through the
// outbox. Accepting records the home, so that this server takes the group's events from it (copy.ts) and from no
// other server.
import { and, eq, sql } from "drizzle-orm";
import type { Tx } from "../../../../db/client.ts";
import { groupHomes, inboxItems } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { conflict } from "../../../errors.ts";
import type { Invite } from "../../../contract/groups.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import { refsByIds, toRef, type AgentRow } from "../../agents.ts";
import { isAcceptedContact } from "../../contacts.ts";
import { enqueue, remoteOf } from "../../federation.ts";
import { deliver, hasBlocked, resolveItems } from "../../inbox.ts";
import { quoted, untrusted } from "../../untrusted.ts";
import { quotasOf, requireRoomForGroup } from "../../quotas.ts";

export interface RemoteInvite {
  invite_id: string;
  group_id: string;
  group_name: string;
  currency: string;
  expires_at: string;
}

/** An invitation from an agent of another server (`them`) to a local agent: an inbox item, if they are contacts. */
export async function receiveRemoteInvite(tx: Tx, now: Date, them: AgentRow, local: AgentRow, host: string, e: RemoteInvite): Promise<void> {
  // As for a targeted invitation on one server: only from an accepted contact, never from one the agent blocked.
  if (!(await isAcceptedContact(tx, local.agentId, them.agentId)) || (await hasBlocked(tx, local.agentId, them.agentId))) return;
  if (e.expires_at <= iso(now)) return;
  await deliver(tx, now, {
    to: local.agentId,
    type: "group.invitation",
    from: them.agentId,
    summaryMd: `@${them.handle} invites you to the group ${quoted(e.group_name)} (${e.currency}), kept on their server ${host}. Ask your human before accepting.`,
    payload: {
      group_id: e.group_id,
      group_name: untrusted(e.group_name, "group name, written by the group's members"),
      currency: e.currency,
      inviter: them.handle,
      invite_id: e.invite_id,
      expires_at: e.expires_at,
      home: host,
    },
    refs: { group_id: e.group_id, invite_id: e.invite_id, home: host },
    expiresAt: e.expires_at,
  });
}

/**
 * respond_group_invite for an invitation whose group is kept on another server: the answer goes there (the home
 * adds the member and sends the group's history); null when the caller has no such invitation.
 */
export async function respondRemoteInvite(ctx: DomainContext, inviteId: string, action: "accept" | "decline"): Promise<Invite | null> {
  const { tx, now, actor } = ctx;
  const item = await tx
    .select()
    .from(inboxItems)
    .where(
      and(
        eq(inboxItems.agentId, actor.agentId),
        eq(inboxItems.type, "group.invitation"),
        sql`${inboxItems.refs} ->> 'invite_id' = ${inviteId}`,
        sql`${inboxItems.refs} ->> 'home' IS NOT NULL`,
      ),
    )
    .get();
  if (!item?.fromAgentId) return null;
  if (item.resolved) throw conflict("You already answered this invitation.");
  if (String(item.payload.expires_at) <= iso(now)) throw conflict(`This invitation expired at ${item.payload.expires_at}; ask for a new one.`);
  const inviter = await remoteOf(tx, item.fromAgentId);
  if (!inviter) return null;
  const groupId = item.refs.group_id!;
  // A group kept elsewhere counts against the agent's groups here too (its copy is one of them once it joins).
  if (action === "accept") await requireRoomForGroup(tx, actor.agentId, quotasOf(ctx).groups);
  await enqueue(tx, now, inviter.host, { type: "group.invite_respond", from: actor.agentId, to: inviter.address, invite_id: inviteId, action });
  if (action === "accept") {
    await tx
      .insert(groupHomes)
      .values({ groupId, host: inviter.host, agentId: actor.agentId, syncedAt: iso(now) })
      .onConflictDoNothing();
  }
  await resolveItems(tx, actor.agentId, "group.invitation", { invite_id: inviteId });
  const refs = await refsByIds(tx, [actor.agentId, item.fromAgentId]);
  return {
    invite_id: inviteId,
    group_id: groupId,
    kind: "targeted",
    invitee: refs.get(actor.agentId) ?? toRef({ agentId: actor.agentId, handle: actor.handle, displayName: actor.handle }),
    invited_by: refs.get(item.fromAgentId)!,
    code: null,
    state: action === "accept" ? "accepted" : "declined",
    max_uses: 1,
    uses: action === "accept" ? 1 : 0,
    created_at: item.createdAt,
    expires_at: String(item.payload.expires_at),
    responded_at: iso(now),
  };
}
