// Placeholder members: a friend without an account, added to a group by name. It is an agent row that is nobody:
// agent id and handle are its member_id (never a valid handle), retired from the start (no one finds it, lists it or
// signs in as it), so the ledger (group_members, expense_shares, ledger_pairs) takes it in splits, payers, balances
// and settle-up like any member; it has no inbox (notices skip it) and no credentials. Whoever holds
// its one-time claim code (join_group, or the claim page) takes it over: in one transaction its whole history
// becomes theirs, and they get one inbox item summing up what they were put down for.
import { and, eq, isNull, or, sql } from "drizzle-orm";
import { randomInt } from "node:crypto";
import { guard, guardChanged, jsonList, snapshotOf, type Tx } from "../../../../db/client.ts";
import {
  agents,
  expenseShares,
  expenses,
  groupBalances,
  groupMembers,
  groupPlaceholders,
  groups,
  ledgerPairs,
  ledgerTotals,
  payments,
} from "../../../../db/schema/index.ts";
import { sha256 } from "../../../auth/secrets.ts";
import { DAY, iso, later } from "../../../clock.ts";
import { AppError, conflict, notFound } from "../../../errors.ts";
import type { Invite } from "../../../contract/groups.ts";
import type { Actor, DomainContext } from "../../../contract/principal.ts";
import { agentById, refsByIds, toRef } from "../../agents.ts";
import { deliver, resolveItems } from "../../inbox.ts";
import { quotasOf, requireRoomForGroup } from "../../quotas.ts";
import { quoted } from "../../untrusted.ts";
import { groupBalances as balancesOfGroup } from "../balances/balances.ts";
import { applyDebts } from "../balances/pairs.ts";
import { memberData } from "../events/members.ts";
import { guardLedgerAsRead, chainFromStart } from "../events/log.ts";
import { remoteOf } from "../../federation.ts";
import { formatAmount, formatBalance, moneyText, totalMinor } from "../money/amounts.ts";
import { logActivity } from "./activity.ts";
import { notifyJoined, untrustedName } from "./groups.ts";
import { isMember, requireWritable } from "./membership.ts";

/** 31 letters and digits without look-alikes, as group invite codes: 20 characters carry about 99 bits. */
const CODE_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";
const CODE_LENGTH = 20;
/** Unclaimed placeholders a group may have at once, so that no member fills the database with names. */
export const MAX_OPEN_PLACEHOLDERS = 50;
/**
 * How long a claim link works: long enough for a friend to get round to it, short enough that a link forgotten in an
 * old chat does not hand over a balance years later. The member who added the placeholder, or the group's owner,
 * makes a new one (create_group_invite with member_id), which ends the old.
 */
export const CLAIM_LIFETIME_MS = 30 * DAY;
/** Claim codes start so, which tells them from group invite codes (those have no dash). */
const CLAIM_PREFIX = "claim-";

const newClaimCode = () => CLAIM_PREFIX + Array.from({ length: CODE_LENGTH }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join("");
const claimHash = (code: string) => sha256(code.trim().toLowerCase());

/** Whether a code someone gives is a placeholder's claim code rather than a group invite code. */
export const isClaimCode = (code: string) => code.trim().toLowerCase().startsWith(CLAIM_PREFIX);

/** The web page that claims a placeholder with its code. */
export const claimPath = (code: string) => `/claim/${encodeURIComponent(code)}`;

/**
 * Stores a new placeholder named `name` in the group, made by `createdBy`: its agent row (nobody), its member row
 * and the digest of its one-time claim code, which is returned here once.
 */
export async function insertPlaceholder(
  tx: Tx,
  now: Date,
  groupId: string,
  name: string,
  createdBy: string,
): Promise<{ memberId: string; code: string; expiresAt: string }> {
  const open = await tx
    .select({ n: sql<number>`count(*)` })
    .from(groupPlaceholders)
    .where(and(eq(groupPlaceholders.groupId, groupId), sql`${groupPlaceholders.claimHash} IS NOT NULL`))
    .get();
  if (Number(open?.n ?? 0) >= MAX_OPEN_PLACEHOLDERS) {
    throw conflict(`The group already has ${MAX_OPEN_PLACEHOLDERS} placeholders nobody has claimed, the most it may have; remove one or wait for a claim.`, {
      limit: MAX_OPEN_PLACEHOLDERS,
    });
  }
  const code = newClaimCode();
  const at = iso(now);
  const expiresAt = later(now, CLAIM_LIFETIME_MS);
  const memberId = crypto.randomUUID();
  await tx.insert(agents).values({ agentId: memberId, handle: memberId, displayName: name, createdAt: at, retiredAt: at });
  await tx.insert(groupPlaceholders).values({
    memberId,
    groupId,
    name,
    createdBy,
    createdAt: at,
    claimHash: claimHash(code),
    claimedBy: null,
    claimedAt: null,
    claimExpiresAt: expiresAt,
  });
  // Counted again as the batch commits: placeholders added since the call counted them count too.
  await guard(
    tx,
    "placeholder limit",
    sql`(SELECT count(*) FROM ${groupPlaceholders} WHERE ${groupPlaceholders.groupId} = ${groupId} AND ${groupPlaceholders.claimHash} IS NOT NULL) <= ${MAX_OPEN_PLACEHOLDERS}`,
  );
  await tx.insert(groupMembers).values({ groupId, agentId: memberId, role: "member", joinedAt: at, leftAt: null });
  return { memberId, code, expiresAt };
}

/** The invite answer that carries a placeholder's claim link, shown once. */
async function placeholderInvite(
  tx: Tx,
  actor: Actor,
  groupId: string,
  p: { memberId: string; name: string },
  code: string,
  expiresAt: string,
  baseUrl: string,
  at: string,
) {
  const claimUrl = `${baseUrl}${claimPath(code)}`;
  // The caller as the call read it (it has just written the placeholder's agent row).
  const inviter = (await refsByIds(snapshotOf(tx), [actor.agentId])).get(actor.agentId)!;
  return {
    invite: {
      invite_id: p.memberId,
      group_id: groupId,
      kind: "placeholder" as const,
      invitee: null,
      invited_by: inviter,
      code,
      state: "pending" as const,
      max_uses: 1,
      uses: 0,
      created_at: at,
      expires_at: expiresAt,
      responded_at: null,
      placeholder: { member_id: p.memberId, name: p.name, claim_url: claimUrl },
    },
    message: `${p.name} is in the group as a placeholder; split expenses with them by member_id ${p.memberId}. Send them this one-time link to take it over, which works until ${expiresAt}: ${claimUrl} (or join_group with the code ${code}).`,
  };
}

/** create_group_invite with `name`: a placeholder in a group the caller may change, answered as an invite with its claim link. */
export async function addPlaceholder(ctx: DomainContext, groupId: string, name: string, baseUrl: string): Promise<{ invite: Invite; message: string }> {
  const { tx, now, actor } = ctx;
  const g = await requireWritable(tx, groupId, actor.agentId);
  if (g.kind === "direct") throw conflict("A direct ledger is between two people; create a group (create_group) to share costs with more.");
  const { memberId, code, expiresAt } = await insertPlaceholder(tx, now, groupId, name, actor.agentId);
  await logActivity(tx, now, {
    groupId,
    actorId: actor.agentId,
    action: "placeholder_added",
    summary: `@${actor.handle} added ${quoted(name)}, who has no account yet`,
    refs: { member_id: memberId },
    data: { placeholder: { member_id: memberId, name } },
  });
  return placeholderInvite(tx, actor, groupId, { memberId, name }, code, expiresAt, baseUrl, iso(now));
}

/**
 * create_group_invite with `member_id`: a new claim link for a placeholder of the group nobody has claimed, when its
 * link expired or was lost; the old link stops working. Only the member who added it, or the group's owner, may: the
 * link hands over the placeholder's balance.
 */
export async function renewPlaceholderLink(
  ctx: DomainContext,
  groupId: string,
  memberId: string,
  baseUrl: string,
): Promise<{ invite: Invite; message: string }> {
  const { tx, now, actor } = ctx;
  const g = await requireWritable(tx, groupId, actor.agentId);
  const p = await tx
    .select()
    .from(groupPlaceholders)
    .where(and(eq(groupPlaceholders.memberId, memberId), eq(groupPlaceholders.groupId, g.groupId), isNull(groupPlaceholders.claimedBy)))
    .get();
  if (!p || !(await isMember(tx, g.groupId, memberId))) throw notFound("Placeholder member (nobody has claimed it, in this group)");
  const mine = await tx
    .select({ role: groupMembers.role })
    .from(groupMembers)
    .where(and(eq(groupMembers.groupId, g.groupId), eq(groupMembers.agentId, actor.agentId), isNull(groupMembers.leftAt)))
    .get();
  if (p.createdBy !== actor.agentId && mine?.role !== "owner") {
    throw new AppError(
      "FORBIDDEN",
      `Only the member who added ${quoted(p.name)}, or the group's owner, can make a new link to take it over.`,
      undefined,
      undefined,
      "Ask the owner (get_group shows who it is) for the new link.",
    );
  }
  const code = newClaimCode();
  const expiresAt = later(now, CLAIM_LIFETIME_MS);
  await tx
    .update(groupPlaceholders)
    .set({ claimHash: claimHash(code), claimExpiresAt: expiresAt })
    .where(eq(groupPlaceholders.memberId, memberId));
  await logActivity(tx, now, {
    groupId: g.groupId,
    actorId: actor.agentId,
    action: "placeholder_link_renewed",
    summary: `@${actor.handle} made a new link for ${quoted(p.name)} to take their place`,
    refs: { member_id: memberId },
  });
  return placeholderInvite(tx, actor, g.groupId, { memberId, name: p.name }, code, expiresAt, baseUrl, iso(now));
}

/** The group's unclaimed placeholders whose link `agentId` may renew: all of them for the owner, else those it added. */
export async function renewableLinks(tx: Tx, groupId: string, agentId: string): Promise<Set<string>> {
  const mine = await tx
    .select({ role: groupMembers.role })
    .from(groupMembers)
    .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.agentId, agentId), isNull(groupMembers.leftAt)))
    .get();
  const rows = await tx
    .select({ memberId: groupPlaceholders.memberId })
    .from(groupPlaceholders)
    .where(
      and(
        eq(groupPlaceholders.groupId, groupId),
        isNull(groupPlaceholders.claimedBy),
        mine?.role === "owner" ? undefined : eq(groupPlaceholders.createdBy, agentId),
      ),
    );
  return new Set(rows.map((r) => r.memberId));
}

/** What an expired claim link says: whom to ask for a new one. */
export const claimExpiredMessage = (name: string, expiredAt: string) =>
  `This link for ${quoted(name)} to take their place expired on ${expiredAt.slice(0, 10)}. Ask whoever sent it for a new one: the member who added ${quoted(name)}, or the group's owner, makes it (create_group_invite with the placeholder's member_id, or "New link" on the group's page).`;

/**
 * The unclaimed placeholder a claim code names, with its group; NOT_FOUND for any other code. `expired`: its link's
 * time is over (claimPlaceholder refuses it).
 */
export async function placeholderByCode(tx: Tx, code: string, now: Date) {
  const row = await tx
    .select({ p: groupPlaceholders, g: groups })
    .from(groupPlaceholders)
    .innerJoin(groups, eq(groups.groupId, groupPlaceholders.groupId))
    .where(and(eq(groupPlaceholders.claimHash, claimHash(code)), isNull(groupPlaceholders.claimedBy)))
    .get();
  if (!row) throw notFound("Claim code (no placeholder has it, or it was already used)");
  return { ...row, expired: row.p.claimExpiresAt !== null && row.p.claimExpiresAt <= iso(now) };
}

/**
 * The caller takes the placeholder over: its membership, shares, payer entries, payments and pair debts become
 * the caller's, in the caller's transaction, and the claim code is spent. A current member of the group cannot
 * claim (CONFLICT: merging two members' histories is not done); a former member can, unless the placeholder shares
 * an expense with their old self.
 */
export async function claimPlaceholder(ctx: DomainContext, code: string): Promise<{ groupId: string }> {
  const { tx, now, actor } = ctx;
  const { p, g, expired } = await placeholderByCode(tx, code, now);
  if (expired) throw conflict(claimExpiredMessage(p.name, p.claimExpiresAt!), { member_id: p.memberId, expired_at: p.claimExpiresAt });
  const me = actor.agentId;
  const ph = p.memberId;
  if (await isMember(tx, g.groupId, me)) {
    throw conflict(
      `You are already a member of this group, so you cannot take over the placeholder ${quoted(p.name)}; ask a member to move its expenses to you with update_expense.`,
      { member_id: ph },
    );
  }
  if (g.archived) throw conflict("The group is archived and read-only; ask a member to unarchive it first.");
  if (await remoteOf(tx, me)) await chainFromStart(tx, g.groupId);
  await requireRoomForGroup(tx, me, quotasOf(ctx).groups);
  const overlap = await tx
    .select({ id: expenseShares.expenseId })
    .from(expenseShares)
    .where(
      and(
        eq(expenseShares.groupId, g.groupId),
        eq(expenseShares.agentId, me),
        sql`${expenseShares.expenseId} IN (SELECT expense_id FROM expense_shares WHERE agent_id = ${ph})`,
      ),
    )
    .get();
  if (overlap) throw conflict(`The placeholder ${quoted(p.name)} shares an expense with you from before you left; it cannot become you.`, { member_id: ph });
  const at = iso(now);
  // As the call read it; register_agent claims for the agent it is creating, which it read from nowhere.
  const meAgent = (await agentById(snapshotOf(tx), me)) ?? {
    agentId: me,
    handle: actor.handle,
    displayName: "displayName" in actor ? String(actor.displayName) : actor.handle,
  };
  // Its debts are moved below as read: an expense or payment committed since makes the call run again.
  await guardLedgerAsRead(tx, g.groupId);
  // Claimed once: a second claim at the same moment runs again, and finds the code used.
  await tx
    .update(groupPlaceholders)
    .set({ claimHash: null, claimedBy: me, claimedAt: at })
    .where(and(eq(groupPlaceholders.memberId, ph), isNull(groupPlaceholders.claimedBy)));
  await guardChanged(tx, "placeholder claim");
  // The placeholder's row stays, so old history snapshots still name it; it now says who took it over.
  await tx.update(agents).set({ mergedInto: me }).where(eq(agents.agentId, ph));

  // Membership: a former member's row comes back; otherwise the placeholder's row becomes the caller's.
  await tx.delete(groupMembers).where(and(eq(groupMembers.groupId, g.groupId), eq(groupMembers.agentId, me)));
  await tx
    .update(groupMembers)
    .set({ agentId: me, joinedAt: at })
    .where(and(eq(groupMembers.groupId, g.groupId), eq(groupMembers.agentId, ph)));

  // Pair debts move as debts: taken out for the placeholder, put back for the caller (the triggers keep the
  // members' balances and open totals), so the claimed balance is exactly the placeholder's.
  const pairs = await tx
    .select()
    .from(ledgerPairs)
    .where(and(eq(ledgerPairs.groupId, g.groupId), or(eq(ledgerPairs.lowId, ph), eq(ledgerPairs.highId, ph))));
  const debts = pairs.map((r) =>
    r.lowOwesMinor > 0 ? { from: r.lowId, to: r.highId, amount: BigInt(r.lowOwesMinor) } : { from: r.highId, to: r.lowId, amount: BigInt(-r.lowOwesMinor) },
  );
  await applyDebts(tx, g.groupId, debts, -1);
  const renamed = debts.map((d) => ({ from: d.from === ph ? me : d.from, to: d.to === ph ? me : d.to, amount: d.amount }));
  await applyDebts(tx, g.groupId, renamed, 1);
  await tx.delete(ledgerPairs).where(and(eq(ledgerPairs.groupId, g.groupId), or(eq(ledgerPairs.lowId, ph), eq(ledgerPairs.highId, ph))));
  await tx.delete(groupBalances).where(and(eq(groupBalances.groupId, g.groupId), eq(groupBalances.agentId, ph)));
  await tx.delete(ledgerTotals).where(eq(ledgerTotals.agentId, ph));

  // The ledger rows that name the placeholder name the caller.
  await tx
    .update(expenseShares)
    .set({ agentId: me })
    .where(and(eq(expenseShares.groupId, g.groupId), eq(expenseShares.agentId, ph)));
  await tx
    .update(payments)
    .set({ fromId: me })
    .where(and(eq(payments.groupId, g.groupId), eq(payments.fromId, ph)));
  await tx
    .update(payments)
    .set({ toId: me })
    .where(and(eq(payments.groupId, g.groupId), eq(payments.toId, ph)));
  const named = await tx
    .select({ expenseId: expenses.expenseId, split: expenses.split, paidBy: expenses.paidBy, deleted: expenses.deleted, amountMinor: expenses.amountMinor })
    .from(expenses)
    .where(and(eq(expenses.groupId, g.groupId), sql`(instr(${expenses.split}, ${ph}) > 0 OR instr(${expenses.paidBy}, ${ph}) > 0)`));
  const rename = <T extends { handle: string }>(list: T[]) => list.map((x) => (x.handle === ph ? { ...x, handle: meAgent.handle } : x));
  for (const e of named) {
    await tx
      .update(expenses)
      .set({ split: { ...e.split, among: rename(e.split.among) }, paidBy: rename(e.paidBy) })
      .where(eq(expenses.expenseId, e.expenseId));
  }

  // What the caller was put down for, summed over the live expenses, as one item to confirm or dispute: read as the
  // call read the ledger, the placeholder's and the caller's together (what the renames above make the caller's).
  const view = snapshotOf(tx);
  const both = sql`IN (${me}, ${ph})`;
  const mine = await view
    .select({ expenseId: expenseShares.expenseId, paid: expenseShares.paidMinor, share: expenseShares.shareMinor })
    .from(expenseShares)
    .innerJoin(expenses, eq(expenses.expenseId, expenseShares.expenseId))
    .where(and(eq(expenseShares.groupId, g.groupId), sql`${expenseShares.agentId} ${both}`, eq(expenses.deleted, false)))
    .orderBy(expenseShares.expenseId);
  const shareTotal = mine.reduce((s, r) => s + BigInt(r.share), 0n);
  const paidTotal = mine.reduce((s, r) => s + BigInt(r.paid), 0n);
  const balances = await balancesOfGroup(view, g.groupId);
  const balance = (balances.get(me) ?? 0n) + (balances.get(ph) ?? 0n);
  // Payments to the placeholder waited for it: they are the caller's to confirm now (respond_payment).
  const toConfirm = await view
    .select({ id: payments.paymentId })
    .from(payments)
    .where(and(eq(payments.groupId, g.groupId), sql`${payments.toId} ${both}`, eq(payments.state, "pending")));
  const waiting = toConfirm.length
    ? ` ${toConfirm.length} payment${toConfirm.length === 1 ? "" : "s"} to you wait${toConfirm.length === 1 ? "s" : ""} for your confirmation (respond_payment).`
    : "";
  const inviter = (await refsByIds(view, [p.createdBy])).get(p.createdBy);
  await deliver(tx, now, {
    to: me,
    type: "ledger.placeholder_claimed",
    from: p.createdBy,
    summaryMd:
      `You took over ${quoted(p.name)} in ${quoted(g.name, 40)}, added by @${inviter?.handle ?? "someone"}: ${mine.length} expense${mine.length === 1 ? "" : "s"}, ` +
      `your shares ${moneyText(Number(shareTotal), g.currency)}, you paid ${moneyText(Number(paidTotal), g.currency)}, balance ${formatBalance(balance, g.currency)}.${waiting} ` +
      "Ask your human, then confirm or dispute each expense with respond_expense.",
    payload: {
      group_id: g.groupId,
      group_name: untrustedName(g),
      member_id: ph,
      name: p.name,
      currency: g.currency,
      expense_ids: mine.map((r) => r.expenseId),
      your_shares_minor: totalMinor(shareTotal),
      your_shares: formatAmount(shareTotal, g.currency),
      you_paid_minor: totalMinor(paidTotal),
      you_paid: formatAmount(paidTotal, g.currency),
      balance_minor: totalMinor(balance),
      balance: formatBalance(balance, g.currency),
      payment_ids_to_confirm: toConfirm.map((r) => r.id),
    },
    refs: { group_id: g.groupId, member_id: ph },
  });
  const ref = toRef(meAgent);
  await notifyJoined(tx, now, g, ref, "code");
  await logActivity(tx, now, {
    groupId: g.groupId,
    actorId: me,
    action: "placeholder_claimed",
    summary: `@${ref.handle} took over ${quoted(p.name)} and joined the group`,
    refs: { member_id: ph, agent_id: me },
    data: { member: await memberData(tx, ref, "member"), placeholder: ph },
  });
  return { groupId: g.groupId };
}

/**
 * Resolves the agent's ledger.placeholder_claimed items of a group once every live expense they share there has
 * their answer (respond_expense): the item asks them to confirm or dispute each one.
 */
export async function resolveClaimWhenAnswered(tx: Tx, agentId: string, groupId: string, answered: readonly string[]): Promise<void> {
  // As the call read them, less those it has just answered (`answered`), which it does not read back.
  const open = await snapshotOf(tx)
    .select({ id: expenseShares.expenseId })
    .from(expenseShares)
    .innerJoin(expenses, eq(expenses.expenseId, expenseShares.expenseId))
    .where(
      and(
        eq(expenseShares.groupId, groupId),
        eq(expenseShares.agentId, agentId),
        eq(expenses.deleted, false),
        sql`NOT EXISTS (SELECT 1 FROM expense_responses r WHERE r.expense_id = ${expenseShares.expenseId} AND r.agent_id = ${agentId})`,
        sql`${expenseShares.expenseId} NOT IN (SELECT value FROM json_each(${jsonList(answered)}))`,
      ),
    )
    .get();
  if (!open) await resolveItems(tx, agentId, "ledger.placeholder_claimed", { group_id: groupId });
}
