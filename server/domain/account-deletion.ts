// Deleting an account, for its person (/account) or the operator (svc users delete). In the ledger the person stays
// as a named former member: their agents row (handle and display name, retired and marked deleted_at), their group
// memberships and every ledger row that names them stay as they were, so each group's balances still sum to zero and
// the others' history reads the same. Like a placeholder that nobody can claim, the former member has no inbox and no
// credentials. Everything else about them goes, in one transaction: clients (API keys, OAuth sessions and tokens,
// browsers), sign-in methods (password, passkeys, provider logins, codes and links), phone, contacts on both sides,
// their inbox, the mail nobody else holds, the plans they organised, federation state, and the groups no one else
// with an account is in (with their attachments). The other members of their groups and their contacts are told.
// Handles joined into theirs (handle-merge.ts) were the same person's and go the same way.
import { and, asc, eq, inArray, isNull, ne, notInArray, or, type SQL, sql } from "drizzle-orm";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { jsonList, snapshotOf, type Tx } from "../../db/client.ts";
import {
  agents,
  apiKeys,
  attemptTimes,
  emailAddresses,
  emailEvents,
  emailOutbox,
  clients,
  contactDeclines,
  contacts,
  envelopeRecipients,
  envelopes,
  expenseAttachments,
  expenseHistory,
  expenseResponses,
  expenseShares,
  expenses,
  federationOutbox,
  federationRequests,
  federationSettings,
  groupBalances,
  groupInvites,
  groupMembers,
  groupPlaceholders,
  groups,
  idempotencyRecords,
  inboxCounts,
  inboxCursors,
  inboxItems,
  joinSessions,
  ledgerActivity,
  ledgerPairs,
  groupEvents,
  groupHomeAgents,
  groupHomes,
  ledgerPairsBuilt,
  ledgerTotals,
  oauthCodes,
  oauthRefreshTokens,
  oidcIdentities,
  passkeys,
  passwords,
  payments,
  phoneCodes,
  planInvitees,
  planOptions,
  plans,
  remoteAgents,
  resetLinks,
  settingsLinks,
  signinCodes,
  spendingTotals,
  webSessions,
} from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { conflict } from "../errors.ts";
import type { AgentRow } from "./agents.ts";
import { enqueue, remoteOf } from "./federation.ts";
import { deliverAll, type Delivery } from "./inbox.ts";
import { logActivity } from "./ledger/groups/activity.ts";
import { groupBalances as balancesOfGroup } from "./ledger/balances/balances.ts";
import { formatBalance, totalMinor } from "./ledger/money/amounts.ts";
import { quoted, untrusted } from "./untrusted.ts";

/** The inbox item the others get. */
export const ACCOUNT_DELETED_ITEM = "network.account_deleted" as const;

export interface DeletionGroup {
  group_id: string;
  name: string;
  kind: "group" | "direct";
  currency: string;
  /** The person's balance there (positive: the others owe them), which stays in the ledger. */
  balance_minor: number;
  balance: string;
}

/** What deleting the account does, before it is done (the page and the CLI show it) and after. */
export interface DeletionPlan {
  handle: string;
  display_name: string;
  /** Groups and direct ledgers shared with someone who still has an account: the person stays there as a former member. */
  kept: DeletionGroup[];
  /** Groups and direct ledgers nobody else with an account is in: removed whole, with their receipts. */
  removed: DeletionGroup[];
  /** How many people are told: the other members of the kept groups and the accepted contacts. */
  told: number;
  /** Contacts (accepted, asked, asking or blocked, either way) that end. */
  contacts: number;
  /** Plans the person organised, removed. */
  plans: number;
  /** Envelopes nobody else holds, removed (those others received or sent stay theirs). */
  envelopes: number;
}

export interface DeletionReport extends DeletionPlan {
  deleted_at: string;
}

/** The ids as a list of bound values, for `IN (...)` inside raw SQL (a person has one id, or a few). */
const listOf = (ids: string[]): SQL =>
  sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );

/** The agent ids that are this person: the handle and any handle joined into it (not placeholders it took over). */
async function personIds(tx: Tx, agentId: string): Promise<string[]> {
  const ids = [agentId];
  for (let i = 0; i < ids.length; i++) {
    const joined = await tx
      .select({ id: agents.agentId })
      .from(agents)
      .where(and(eq(agents.mergedInto, ids[i]!), ne(agents.handle, agents.agentId)));
    for (const j of joined) if (!ids.includes(j.id)) ids.push(j.id);
  }
  return ids;
}

/** A handle that can be deleted: a live local account (not a placeholder, a joined handle, or an agent of another server). */
async function requireDeletable(tx: Tx, agent: AgentRow): Promise<void> {
  if (agent.retiredAt || agent.deletedAt || agent.handle === agent.agentId) throw conflict(`@${agent.handle} is not a live account on this server.`);
  if (await remoteOf(tx, agent.agentId)) throw conflict(`@${agent.handle} is an agent of another svc server; only its own server can delete it.`);
}

interface Survey {
  plan: DeletionPlan;
  ids: string[];
  /** Kept groups: their row, the live others in it, and whether it is a copy of a group kept on another server. */
  keptGroups: { g: typeof groups.$inferSelect; others: string[]; role: "owner" | "member"; copy: boolean }[];
  /** Groups whose rows go: those nobody else can read, and copies kept here for the person alone. */
  removedIds: string[];
  /** Local people to tell, each with the kept groups they share with the person. */
  toTell: Map<string, { groups: DeletionGroup[]; contact: boolean }>;
  /** Contacts on other servers: their server is told the contact ended. */
  remoteContacts: { from: string; host: string; address: string }[];
  /** The other servers that keep groups the person was in, their homes or copies: each is told the account ended. */
  servers: Set<string>;
  planIds: string[];
  envelopeIds: string[];
}

/** Reads what deleting the account touches. */
async function survey(tx: Tx, agent: AgentRow): Promise<Survey> {
  const ids = await personIds(tx, agent.agentId);
  const memberships = await tx
    .select({ g: groups, role: groupMembers.role, home: groupHomes.host })
    .from(groupMembers)
    .innerJoin(groups, eq(groups.groupId, groupMembers.groupId))
    .leftJoin(groupHomes, eq(groupHomes.groupId, groupMembers.groupId))
    .where(and(eq(groupMembers.agentId, agent.agentId), isNull(groupMembers.leftAt)))
    .orderBy(asc(groups.createdAt), asc(groups.groupId));
  const keptGroups: Survey["keptGroups"] = [];
  const kept: DeletionGroup[] = [];
  const removed: DeletionGroup[] = [];
  const removedIds: string[] = [];
  const toTell: Survey["toTell"] = new Map();
  const servers = new Set<string>();
  for (const { g, role, home } of memberships) {
    if (home) servers.add(home);
    // Others who can still read the group: current members with an account (placeholders and deleted ones are
    // retired). Members of other servers read a group kept here through their copies; a copy kept here is read only
    // by this server's agents. Only this server's agents have an inbox here to be told in.
    const others = await tx
      .select({ id: groupMembers.agentId, remote: remoteAgents.host })
      .from(groupMembers)
      .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
      .leftJoin(remoteAgents, eq(remoteAgents.agentId, groupMembers.agentId))
      .where(and(eq(groupMembers.groupId, g.groupId), isNull(groupMembers.leftAt), isNull(agents.retiredAt), notInArray(groupMembers.agentId, ids)))
      .then((rows) => (home ? rows.filter((r) => r.remote === null) : rows));
    const b = (await balancesOfGroup(tx, g.groupId)).get(agent.agentId) ?? 0n;
    const entry: DeletionGroup = {
      group_id: g.groupId,
      name: g.name,
      kind: g.kind,
      currency: g.currency,
      balance_minor: totalMinor(b),
      balance: formatBalance(b, g.currency),
    };
    if (!others.length) {
      // A copy kept here for the person alone goes; the group lives on at its home, the person a former member there.
      (home ? kept : removed).push(entry);
      removedIds.push(g.groupId);
      continue;
    }
    kept.push(entry);
    keptGroups.push({ g, others: others.map((o) => o.id), role, copy: home !== null });
    for (const o of others) {
      if (o.remote !== null) {
        servers.add(o.remote);
        continue;
      }
      const t = toTell.get(o.id) ?? { groups: [], contact: false };
      t.groups.push(entry);
      toTell.set(o.id, t);
    }
  }
  const related = await tx
    .select({ c: contacts, remote: remoteAgents, retiredAt: agents.retiredAt })
    .from(contacts)
    .innerJoin(agents, eq(agents.agentId, contacts.otherId))
    .leftJoin(remoteAgents, eq(remoteAgents.agentId, contacts.otherId))
    .where(inArray(contacts.ownerId, ids));
  const remoteContacts: Survey["remoteContacts"] = [];
  for (const { c, remote, retiredAt } of related) {
    if (remote) {
      if (c.state === "accepted" || c.state === "outgoing") remoteContacts.push({ from: c.ownerId, host: remote.host, address: remote.address });
    } else if (c.state === "accepted" && !retiredAt && !ids.includes(c.otherId)) {
      const t = toTell.get(c.otherId) ?? { groups: [], contact: false };
      t.contact = true;
      toTell.set(c.otherId, t);
    }
  }
  const contactRows = await tx
    .select({ n: sql<number>`count(*)` })
    .from(contacts)
    .where(and(inArray(contacts.ownerId, ids), notInArray(contacts.otherId, ids)))
    .get();
  const planIds = (await tx.select({ id: plans.planId }).from(plans).where(inArray(plans.organiserId, ids))).map((p) => p.id);
  // An envelope stays while a live local agent other than the person can read it: its sender, or a recipient it reached.
  const holders = sql`(SELECT agent_id FROM agents WHERE retired_at IS NULL AND agent_id NOT IN (SELECT agent_id FROM remote_agents))`;
  const idList = listOf(ids);
  const envelopeIds = (
    await tx
      .select({ id: envelopes.envelopeId })
      .from(envelopes)
      .where(
        and(
          or(
            inArray(envelopes.senderId, ids),
            sql`EXISTS (SELECT 1 FROM envelope_recipients r WHERE r.envelope_id = ${envelopes.envelopeId} AND r.agent_id IN (${idList}))`,
          ),
          sql`NOT (${envelopes.senderId} NOT IN (${idList}) AND ${envelopes.senderId} IN ${holders})`,
          sql`NOT EXISTS (SELECT 1 FROM envelope_recipients r WHERE r.envelope_id = ${envelopes.envelopeId} AND r.delivered = 1 AND r.agent_id NOT IN (${idList}) AND r.agent_id IN ${holders})`,
        ),
      )
  ).map((e) => e.id);
  return {
    plan: {
      handle: agent.handle,
      display_name: agent.displayName,
      kept,
      removed,
      told: toTell.size,
      contacts: Number(contactRows?.n ?? 0),
      plans: planIds.length,
      envelopes: envelopeIds.length,
    },
    ids,
    keptGroups,
    removedIds,
    toTell,
    remoteContacts,
    servers,
    planIds,
    envelopeIds,
  };
}

/** What deleting the account would do, read without changing anything. */
export async function deletionPlan(tx: Tx, agent: AgentRow): Promise<DeletionPlan> {
  await requireDeletable(tx, agent);
  return (await survey(tx, agent)).plan;
}

/**
 * Deletes the account in the caller's transaction (see the top of this file). Refused (CONFLICT) for anything but a
 * live account of this server.
 */
export async function deleteAccount(tx: Tx, now: Date, agent: AgentRow): Promise<DeletionReport> {
  await requireDeletable(tx, agent);
  const s = await survey(tx, agent);
  const { ids } = s;
  const at = iso(now);

  await stayAsFormerMember(tx, now, agent, s.keptGroups, "deleted their account");
  for (const groupId of s.removedIds) await removeGroup(tx, groupId);
  await tx.delete(groupInvites).where(inArray(groupInvites.targetId, ids));

  // Told before the contacts go; a ledger-wide notice, from nobody (the person has no inbox to answer from).
  await tellOthers(tx, now, agent, s.toTell);
  for (const r of s.remoteContacts) await enqueue(tx, now, r.host, { type: "contact.remove", from: r.from, to: r.address });
  // The other servers that keep groups they were in (homes and copies): there too they become a former member, their
  // members are told, and a home stops sending this server the events of a group nobody here reads any more.
  for (const host of s.servers) await enqueue(tx, now, host, { type: "account.deleted", from: agent.agentId });

  // Credentials and sign-in: every client and what hangs on it.
  // (The clients themselves go last: the others are found through them.)
  const byClient = (column: AnySQLiteColumn): SQL => sql`${column} IN (SELECT client_id FROM clients WHERE agent_id IN (${listOf(ids)}))`;
  await tx.delete(apiKeys).where(byClient(apiKeys.clientId));
  await tx.delete(oauthRefreshTokens).where(byClient(oauthRefreshTokens.clientId));
  await tx.delete(inboxCursors).where(byClient(inboxCursors.clientId));
  await tx.delete(webSessions).where(or(inArray(webSessions.agentId, ids), byClient(webSessions.clientId)));
  await tx.delete(oauthCodes).where(or(inArray(oauthCodes.agentId, ids), byClient(oauthCodes.clientId), byClient(oauthCodes.parentClientId)));
  await tx.delete(joinSessions).where(or(inArray(joinSessions.agentId, ids), byClient(joinSessions.clientId), byClient(joinSessions.parentClientId)));
  await tx.delete(signinCodes).where(or(inArray(signinCodes.agentId, ids), byClient(signinCodes.readByClientId)));
  await tx.delete(settingsLinks).where(or(inArray(settingsLinks.agentId, ids), byClient(settingsLinks.clientId)));
  await tx.delete(clients).where(inArray(clients.agentId, ids));
  for (const table of [
    phoneCodes,
    resetLinks,
    passwords,
    passkeys,
    oidcIdentities,
    idempotencyRecords,
    federationSettings,
    federationRequests,
    emailAddresses,
    emailEvents,
    emailOutbox,
  ] as const)
    await tx.delete(table).where(inArray(table.agentId, ids));
  // Guess counters keyed by the agent (a tool's guesses, "tool:what:agent_id") or by the handle (passwords, codes).
  const handles = (await tx.select({ handle: agents.handle }).from(agents).where(inArray(agents.agentId, ids))).map((a) => a.handle);
  for (const id of ids) await tx.delete(attemptTimes).where(sql`instr(${attemptTimes.key}, ${id}) > 0`);
  for (const handle of handles) await tx.delete(attemptTimes).where(sql`substr(${attemptTimes.key}, ${-(handle.length + 1)}) = ${`:${handle}`}`);

  // Contacts, both sides, and declined requests either way.
  await tx.delete(contacts).where(or(inArray(contacts.ownerId, ids), inArray(contacts.otherId, ids)));
  await tx.delete(contactDeclines).where(or(inArray(contactDeclines.requesterId, ids), inArray(contactDeclines.targetId, ids)));

  // Plans they organised, with what the invitees were sent of them; their place on others' plans.
  if (s.planIds.length) {
    await tx
      .delete(inboxItems)
      .where(and(eq(inboxItems.app, "plans"), sql`json_extract(${inboxItems.refs}, '$.plan_id') IN (SELECT value FROM json_each(${jsonList(s.planIds)}))`));
    await tx.delete(planOptions).where(inArray(planOptions.planId, s.planIds));
    await tx.delete(planInvitees).where(inArray(planInvitees.planId, s.planIds));
    await tx.delete(plans).where(inArray(plans.planId, s.planIds));
  }
  await tx.delete(planInvitees).where(inArray(planInvitees.agentId, ids));

  // Mail nobody else holds.
  if (s.envelopeIds.length) {
    const list = jsonList(s.envelopeIds);
    await tx.delete(envelopeRecipients).where(sql`${envelopeRecipients.envelopeId} IN (SELECT value FROM json_each(${list}))`);
    await tx.delete(envelopes).where(sql`${envelopes.envelopeId} IN (SELECT value FROM json_each(${list}))`);
  }

  // Their inbox; and what they left in others' inboxes outside the ledger and mail (contact requests and answers,
  // plan answers): those name a contact or a plan that is gone. Ledger items and envelopes others hold stay.
  await tx.delete(inboxItems).where(inArray(inboxItems.agentId, ids));
  await tx.delete(inboxCounts).where(inArray(inboxCounts.agentId, ids));
  await tx.delete(inboxItems).where(and(inArray(inboxItems.fromAgentId, ids), inArray(inboxItems.app, ["network", "plans"])));

  // What they were sending to other servers (their contacts there are told the contact ended, just above).
  await tx
    .delete(federationOutbox)
    .where(
      and(
        sql`json_extract(${federationOutbox.event}, '$.from') IN (${listOf(ids)})`,
        sql`json_extract(${federationOutbox.event}, '$.type') NOT IN ('contact.remove', 'account.deleted')`,
      ),
    );

  // Open totals left at zero by the groups removed.
  await tx.delete(ledgerTotals).where(and(inArray(ledgerTotals.agentId, ids), eq(ledgerTotals.openMinor, 0)));

  // The row stays: the ledger names them, and the handle is never handed out again (join.ts handleTaken). A handle
  // joined into theirs no longer points at it: both are former members now, each on its own.
  await tx
    .update(agents)
    .set({
      description: null,
      contactCode: null,
      email: null,
      emailVerified: false,
      phone: null,
      phoneVerified: false,
      phoneSetThroughClientId: null,
      deletedAt: at,
      mergedInto: null,
    })
    .where(inArray(agents.agentId, ids));
  // Retired from now on (found by no one, no inbox); a handle joined into this one keeps the date it was retired.
  await tx
    .update(agents)
    .set({ retiredAt: at })
    .where(and(inArray(agents.agentId, ids), isNull(agents.retiredAt)));
  return { ...s.plan, deleted_at: at };
}

/**
 * An agent of another server whose account was deleted there (its server's `account.deleted`): in the groups kept
 * here it stays a former member as a local one would, under its name and with its balance; the members of this
 * server are told; a group left with nobody who can read it goes; and no group's events are sent to its server for
 * it any more (its row is retired: log.ts followers).
 */
export async function remoteAccountDeleted(tx: Tx, now: Date, agent: AgentRow, host: string): Promise<void> {
  const s = await survey(tx, agent);
  await stayAsFormerMember(tx, now, agent, s.keptGroups, "deleted their account on their server");
  for (const groupId of s.removedIds) await removeGroup(tx, groupId);
  await tellOthers(tx, now, agent, s.toTell, `their server (${host})`);
  await tx.delete(groupInvites).where(eq(groupInvites.targetId, agent.agentId));
  await tx.delete(contacts).where(or(eq(contacts.ownerId, agent.agentId), eq(contacts.otherId, agent.agentId)));
  const at = iso(now);
  await tx.update(agents).set({ deletedAt: at, retiredAt: at }).where(eq(agents.agentId, agent.agentId));
}

/**
 * The ledger: in each kept group the person stays a member under their name; an owner's role passes on. A copy of a
 * group kept on another server is left as it is: its home changes it, and its events bring the change here.
 */
async function stayAsFormerMember(tx: Tx, now: Date, agent: AgentRow, keptGroups: Survey["keptGroups"], what: string): Promise<void> {
  for (const { g, others, role, copy } of keptGroups) {
    if (copy) continue;
    if (role === "owner") {
      await tx
        .update(groupMembers)
        .set({ role: "member" })
        .where(and(eq(groupMembers.groupId, g.groupId), eq(groupMembers.agentId, agent.agentId)));
      // The other members' rows, as the call read them: it has written only the leaver's.
      const owner = await snapshotOf(tx)
        .select({ id: groupMembers.agentId })
        .from(groupMembers)
        .where(and(eq(groupMembers.groupId, g.groupId), isNull(groupMembers.leftAt), eq(groupMembers.role, "owner"), inArray(groupMembers.agentId, others)))
        .get();
      if (!owner) {
        // The longest-standing member with an account takes over, as when an owner leaves.
        const next = await snapshotOf(tx)
          .select({ id: groupMembers.agentId })
          .from(groupMembers)
          .where(and(eq(groupMembers.groupId, g.groupId), isNull(groupMembers.leftAt), inArray(groupMembers.agentId, others)))
          .orderBy(asc(groupMembers.joinedAt), sql`rowid`)
          .get();
        if (next)
          await tx
            .update(groupMembers)
            .set({ role: "owner" })
            .where(and(eq(groupMembers.groupId, g.groupId), eq(groupMembers.agentId, next.id)));
      }
    }
    await logActivity(tx, now, {
      groupId: g.groupId,
      actorId: agent.agentId,
      action: "account_deleted",
      summary: `@${agent.handle} ${what}; they stay in the ledger as a former member`,
    });
  }
}

/** A group or direct ledger nobody with an account can read any more: every row of it goes, its placeholders too. */
async function removeGroup(tx: Tx, groupId: string): Promise<void> {
  const ofGroup = sql`(SELECT expense_id FROM expenses WHERE group_id = ${groupId})`;
  // Pairs first: their triggers read the group's currency to keep everyone's open totals.
  await tx.delete(ledgerPairs).where(eq(ledgerPairs.groupId, groupId));
  await tx.delete(groupBalances).where(eq(groupBalances.groupId, groupId));
  await tx.delete(ledgerPairsBuilt).where(eq(ledgerPairsBuilt.groupId, groupId));
  await tx.delete(expenseAttachments).where(eq(expenseAttachments.groupId, groupId));
  await tx.delete(expenseHistory).where(sql`${expenseHistory.expenseId} IN ${ofGroup}`);
  await tx.delete(expenseResponses).where(sql`${expenseResponses.expenseId} IN ${ofGroup}`);
  await tx.delete(expenseShares).where(eq(expenseShares.groupId, groupId));
  await tx.delete(expenses).where(eq(expenses.groupId, groupId));
  await tx.delete(spendingTotals).where(eq(spendingTotals.groupId, groupId));
  await tx.delete(payments).where(eq(payments.groupId, groupId));
  await tx.delete(ledgerActivity).where(eq(ledgerActivity.groupId, groupId));
  await tx.delete(groupEvents).where(eq(groupEvents.groupId, groupId));
  await tx.delete(groupHomes).where(eq(groupHomes.groupId, groupId));
  await tx.delete(groupHomeAgents).where(eq(groupHomeAgents.groupId, groupId));
  await tx.delete(groupInvites).where(eq(groupInvites.groupId, groupId));
  const ghosts = (await tx.select({ id: groupPlaceholders.memberId }).from(groupPlaceholders).where(eq(groupPlaceholders.groupId, groupId))).map((p) => p.id);
  await tx.delete(groupPlaceholders).where(eq(groupPlaceholders.groupId, groupId));
  await tx.delete(groupMembers).where(eq(groupMembers.groupId, groupId));
  if (ghosts.length) {
    await tx.delete(ledgerTotals).where(inArray(ledgerTotals.agentId, ghosts));
    await tx.delete(agents).where(inArray(agents.agentId, ghosts));
  }
  // Someone else's plan may have named the group; it stays, without it.
  await tx.update(plans).set({ groupId: null }).where(eq(plans.groupId, groupId));
  await tx.delete(groups).where(eq(groups.groupId, groupId));
}

/** One network.account_deleted item to each person told, naming only the groups they share with the person. */
async function tellOthers(tx: Tx, now: Date, agent: AgentRow, toTell: Survey["toTell"], server = "this server"): Promise<void> {
  const source = "group name, written by the group's members";
  const ds: Delivery[] = [];
  for (const [to, t] of toTell) {
    const where = t.groups.length
      ? ` They stay in ${t.groups.map((g) => (g.kind === "direct" ? "your direct ledger" : quoted(g.name, 40))).join(", ")} as a former member, under their name and with their balance; settle with them or among yourselves as before (get_balances).`
      : "";
    const contact = t.contact ? " They are no longer your contact." : "";
    ds.push({
      to,
      type: ACCOUNT_DELETED_ITEM,
      from: null,
      summaryMd: `@${agent.handle} deleted their account on ${server}.${where}${contact}`,
      payload: {
        handle: agent.handle,
        display_name: agent.displayName,
        member_id: agent.agentId,
        was_contact: t.contact,
        groups: t.groups.map((g) => ({
          group_id: g.group_id,
          group_name: untrusted(g.name, source),
          kind: g.kind,
          currency: g.currency,
          their_balance_minor: g.balance_minor,
          their_balance: g.balance,
        })),
      },
      refs: { agent_id: agent.agentId, handle: agent.handle },
    });
  }
  await deliverAll(tx, now, ds);
}
