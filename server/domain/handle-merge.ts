// A handle made twice: the identity provider verified the same e-mail on two handles, and the human joins one into
// the other. The retired handle's clients (API keys, OAuth sessions) move to the kept handle, so every agent of
// the human acts as the kept handle from then on; the retired handle keeps its history (expenses, messages name it)
// but can no longer sign in, be found, or be registered again. Refused while the retired handle still has things
// that need it: the page names each one.
import { and, asc, eq, gt, inArray, isNull, ne, or, sql } from "drizzle-orm";
import { jsonList, snapshotOf, type Tx } from "../../db/client.ts";
import {
  agents,
  clients,
  contacts,
  groupMembers,
  groups,
  inboxCursors,
  joinSessions,
  oauthCodes,
  oidcIdentities,
  payments,
  plans,
  settingsLinks,
  signinCodes,
  phoneCodes,
  webSessions,
} from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { conflict } from "../errors.ts";
import { refsByIds, type AgentRow } from "./agents.ts";
import { moveEmail } from "./email/addresses.ts";
import { archiveGroup } from "./ledger/groups/groups.ts";
import { groupBalances } from "./ledger/balances/balances.ts";
import { formatAmount, formatBalance } from "./ledger/money/amounts.ts";

/** Other live handles with a login at `issuer` whose e-mail the provider verified as `email`. */
export async function handlesWithVerifiedEmail(tx: Tx, issuer: string, email: string, exceptAgentId: string): Promise<AgentRow[]> {
  const rows = await tx
    .selectDistinct({ agent: agents })
    .from(oidcIdentities)
    .innerJoin(agents, eq(agents.agentId, oidcIdentities.agentId))
    .where(
      and(
        eq(oidcIdentities.issuer, issuer),
        eq(oidcIdentities.email, email),
        eq(oidcIdentities.emailVerified, true),
        ne(agents.agentId, exceptAgentId),
        isNull(agents.retiredAt),
      ),
    )
    .orderBy(asc(agents.handle));
  return rows.map((r) => r.agent);
}

/** The e-mails the provider at `issuer` verified for this handle's logins. */
export async function verifiedEmails(tx: Tx, agentId: string, issuer: string): Promise<string[]> {
  const rows = await tx
    .selectDistinct({ email: oidcIdentities.email })
    .from(oidcIdentities)
    .where(and(eq(oidcIdentities.agentId, agentId), eq(oidcIdentities.issuer, issuer), eq(oidcIdentities.emailVerified, true)));
  return rows.flatMap((r) => (r.email ? [r.email] : []));
}

/** What still needs the handle to be retired, one sentence each; empty when it can be joined into another. */
export async function mergeBlockers(tx: Tx, now: Date, retire: AgentRow): Promise<string[]> {
  const who = `@${retire.handle}`;
  const blockers: string[] = [];
  const memberships = await tx
    .select({ g: groups })
    .from(groupMembers)
    .innerJoin(groups, eq(groups.groupId, groupMembers.groupId))
    .where(and(eq(groupMembers.agentId, retire.agentId), isNull(groupMembers.leftAt)))
    .orderBy(asc(groups.createdAt));
  for (const { g } of memberships) {
    const balances = await groupBalances(tx, g.groupId);
    const mine = balances.get(retire.agentId) ?? 0n;
    const balance = mine === 0n ? "" : `, balance ${formatBalance(mine, g.currency)}`;
    if (g.kind === "group") {
      blockers.push(
        `${who} is still a member of the group “${g.name}”${balance}: ${mine === 0n ? "" : "settle up (record_payment), then "}leave it (leave_group).`,
      );
    } else if (mine !== 0n) {
      const other = [...balances.keys()].find((id) => id !== retire.agentId);
      const them = other ? (await refsByIds(tx, [other])).get(other) : undefined;
      blockers.push(
        `${who}'s direct ledger with @${them?.handle ?? "someone"} has a balance of ${formatBalance(mine, g.currency)}: settle up first (record_payment).`,
      );
    }
  }
  const pending = await tx
    .select({ p: payments, currency: groups.currency })
    .from(payments)
    .innerJoin(groups, eq(groups.groupId, payments.groupId))
    .where(and(eq(payments.state, "pending"), or(eq(payments.fromId, retire.agentId), eq(payments.toId, retire.agentId))))
    .orderBy(asc(payments.createdAt));
  if (pending.length) {
    const names = await refsByIds(
      tx,
      pending.flatMap(({ p }) => [p.fromId, p.toId]),
    );
    for (const { p, currency } of pending) {
      const payee = names.get(p.toId)?.handle;
      blockers.push(
        `A payment of ${formatAmount(p.amountMinor, currency)} ${currency} from @${names.get(p.fromId)?.handle} to @${payee} waits for @${payee} to confirm it${p.toId === retire.agentId ? " (respond_payment)" : ""}.`,
      );
    }
  }
  const organised = await tx
    .select({ title: plans.title })
    .from(plans)
    .where(and(eq(plans.organiserId, retire.agentId), inArray(plans.state, ["proposed", "scheduled"]), gt(plans.endsAt, iso(now))))
    .orderBy(asc(plans.startsAt));
  for (const p of organised) blockers.push(`${who} organises the plan “${p.title}”, which is still ahead: cancel it (cancel_plan) or let it pass.`);
  return blockers;
}

export interface MergePreview {
  blockers: string[];
  /** The retired handle's connected clients, which will act as the kept handle. */
  clients: { name: string; kind: "api_key" | "oauth" | "web" }[];
  /** Handles whose contact relation with the retired handle ends (accepted, or a request either way). */
  contacts: string[];
}

export async function mergePreview(tx: Tx, now: Date, retire: AgentRow): Promise<MergePreview> {
  const live = await tx
    .select({ name: clients.name, kind: clients.kind })
    .from(clients)
    .where(and(eq(clients.agentId, retire.agentId), isNull(clients.revokedAt), ne(clients.kind, "web")))
    .orderBy(asc(clients.createdAt));
  const related = await tx
    .select({ handle: agents.handle })
    .from(contacts)
    .innerJoin(agents, eq(agents.agentId, contacts.otherId))
    .where(and(eq(contacts.ownerId, retire.agentId), ne(contacts.state, "blocked")))
    .orderBy(asc(agents.handle));
  return { blockers: await mergeBlockers(tx, now, retire), clients: live, contacts: related.map((r) => r.handle) };
}

/**
 * Joins `retire` into `keep` in the caller's transaction: its clients, pending joins and provider logins move to
 * `keep`; every way to act as `retire` (sign-in codes, settings links, browser sessions, unused authorization codes)
 * ends; its contact relations end as remove_contact would end them; its direct ledgers (all settled) are archived;
 * the handle is retired. Returns how many clients moved.
 */
export async function mergeHandles(tx: Tx, now: Date, keep: AgentRow, retire: AgentRow): Promise<number> {
  const blockers = await mergeBlockers(tx, now, retire);
  if (blockers.length) throw conflict(`@${retire.handle} cannot be joined yet: ${blockers.join(" ")}`, { blockers });
  const at = iso(now);
  // Browsers signed in as the retired handle end with their sessions (below); what they obtained moves with the rest.
  const live = and(eq(clients.agentId, retire.agentId), isNull(clients.revokedAt), ne(clients.kind, "web"));
  // As the call read them (the page may have ended this browser's own client already).
  const moved = await snapshotOf(tx).select({ clientId: clients.clientId }).from(clients).where(live);
  await tx
    .update(clients)
    .set({ revokedAt: at })
    .where(and(eq(clients.agentId, retire.agentId), isNull(clients.revokedAt), eq(clients.kind, "web")));
  await tx.update(clients).set({ agentId: keep.agentId }).where(live);
  // A moved client reads the kept handle's inbox from its start, not from where it stopped in the other inbox.
  if (moved.length)
    // The moved clients as one value: an agent's clients have no bound.
    await tx.delete(inboxCursors).where(sql`${inboxCursors.clientId} IN (SELECT value FROM json_each(${jsonList(moved.map((m) => m.clientId))}))`);
  // An app the human already approved for the retired handle, whose key is not yet handed out, joins the kept one.
  await tx
    .update(joinSessions)
    .set({ agentId: keep.agentId })
    .where(and(eq(joinSessions.agentId, retire.agentId), isNull(joinSessions.keyIssuedAt)));
  await tx.update(oidcIdentities).set({ agentId: keep.agentId }).where(eq(oidcIdentities.agentId, retire.agentId));
  await tx
    .update(oauthCodes)
    .set({ expiresAt: at })
    .where(and(eq(oauthCodes.agentId, retire.agentId), isNull(oauthCodes.usedAt)));
  await tx
    .update(signinCodes)
    .set({ usedAt: at })
    .where(and(eq(signinCodes.agentId, retire.agentId), isNull(signinCodes.usedAt)));
  await tx
    .update(settingsLinks)
    .set({ usedAt: at })
    .where(and(eq(settingsLinks.agentId, retire.agentId), isNull(settingsLinks.usedAt)));
  await tx
    .update(phoneCodes)
    .set({ usedAt: at })
    .where(and(eq(phoneCodes.agentId, retire.agentId), isNull(phoneCodes.usedAt)));
  // The human proved that phone too: the kept handle takes it unless it has its own.
  if (retire.phoneVerified && !keep.phoneVerified)
    await tx
      .update(agents)
      .set({ phone: retire.phone, phoneVerified: true, phoneSetThroughClientId: retire.phoneSetThroughClientId })
      .where(eq(agents.agentId, keep.agentId));
  // So is its e-mail address: the kept handle takes it unless it has one; the retired handle is mailed nothing more.
  await moveEmail(tx, retire.agentId, keep.agentId);
  await tx.delete(webSessions).where(eq(webSessions.agentId, retire.agentId));
  // Others' blocks of the retired handle stay: they are the others' decision and harm no one.
  await tx.delete(contacts).where(eq(contacts.ownerId, retire.agentId));
  await tx.delete(contacts).where(and(eq(contacts.otherId, retire.agentId), ne(contacts.state, "blocked")));
  const directs = await tx
    .select({ groupId: groups.groupId })
    .from(groupMembers)
    .innerJoin(groups, eq(groups.groupId, groupMembers.groupId))
    .where(and(eq(groupMembers.agentId, retire.agentId), isNull(groupMembers.leftAt), eq(groups.kind, "direct")));
  for (const d of directs) await archiveGroup({ tx, now, actor: retire }, d.groupId, true);
  await tx.update(agents).set({ retiredAt: at, mergedInto: keep.agentId, contactCode: null }).where(eq(agents.agentId, retire.agentId));
  return moved.length;
}
