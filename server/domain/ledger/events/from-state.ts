// The events of a group made before svc kept each group's chain (migration 0033_group_events), built from what the
// group holds now, so that a member's server can build its copy from them as from any group's: the group with its
// owner, every member (those who left, then leaving), the placeholders nobody claimed, each expense as it stands
// (a deleted one deleted) with the answers to its versions, each payment as it stands. Each event's deltas are what
// its data makes, so the copy checks them as it checks any event; its history begins with the group as it was
// when it was first shared.
import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import type { Tx } from "../../../../db/client.ts";
import { agents, expenseResponses, expenses, groupMembers, groupPlaceholders, groups, payments } from "../../../../db/schema/index.ts";
import { expenseDebts, paymentDebt } from "../balances/pairs.ts";
import { sharesOf, stateOfRow, toSnapshot } from "../expenses/store.ts";
import type { Debt } from "../money/fewest-transfers.ts";
import { paymentData } from "../payments/payments.ts";
import type { GroupEventBody } from "./chain.ts";
import { groupData, memberData } from "./members.ts";

export type UnsealedBody = Omit<GroupEventBody, "seq" | "prev_hash">;

const AS_IT_STOOD = "as it stood when the group was first shared with another server";

/** Balance changes by member, as integer text (GroupEventBody.deltas). */
function deltasOf(debts: readonly Debt[]): Record<string, string> {
  const m = new Map<string, bigint>();
  for (const d of debts) {
    m.set(d.from, (m.get(d.from) ?? 0n) - d.amount);
    m.set(d.to, (m.get(d.to) ?? 0n) + d.amount);
  }
  return Object.fromEntries([...m].filter(([, v]) => v !== 0n).map(([id, v]) => [id, v.toString()]));
}

export async function eventsFromState(tx: Tx, groupId: string): Promise<UnsealedBody[]> {
  const g = (await tx.select().from(groups).where(eq(groups.groupId, groupId)).get())!;
  const out: UnsealedBody[] = [];
  const event = (type: string, actorId: string, at: string, summary: string, data: unknown, deltas: Record<string, string> = {}) =>
    out.push({ v: 1, group_id: groupId, type, actor_id: actorId, at, refs: {}, summary, deltas, data });

  const unclaimed = await tx
    .select({
      memberId: groupPlaceholders.memberId,
      name: groupPlaceholders.name,
      createdBy: groupPlaceholders.createdBy,
      createdAt: groupPlaceholders.createdAt,
    })
    .from(groupPlaceholders)
    .where(and(eq(groupPlaceholders.groupId, groupId), isNull(groupPlaceholders.claimedBy)));
  const placeholderIds = new Set(unclaimed.map((p) => p.memberId));
  const members = (
    await tx
      .select({
        agentId: agents.agentId,
        handle: agents.handle,
        displayName: agents.displayName,
        role: groupMembers.role,
        joinedAt: groupMembers.joinedAt,
        leftAt: groupMembers.leftAt,
      })
      .from(groupMembers)
      .innerJoin(agents, eq(agents.agentId, groupMembers.agentId))
      .where(eq(groupMembers.groupId, groupId))
      .orderBy(asc(groupMembers.joinedAt))
  ).filter((m) => !placeholderIds.has(m.agentId));
  // The group's first member is its owner now (the one who made it may have left or passed the role on).
  const owner = members.find((m) => m.role === "owner" && m.leftAt === null) ?? members.find((m) => m.agentId === g.createdBy) ?? members[0];
  if (!owner) throw new Error(`group ${groupId} has no member to start its chain with`);
  const asData = (m: (typeof members)[number], role: "owner" | "member") =>
    memberData(tx, { agent_id: m.agentId, handle: m.handle, display_name: m.displayName }, role);
  event("group_created", owner.agentId, g.createdAt, `@${owner.handle}'s group, ${AS_IT_STOOD}`, {
    group: groupData(g),
    member: await asData(owner, "owner"),
  });
  for (const m of members) {
    if (m === owner) continue;
    event("member_joined", m.agentId, m.joinedAt, `@${m.handle} is a member`, { member: await asData(m, m.role) });
  }
  for (const p of unclaimed) {
    event("placeholder_added", p.createdBy, p.createdAt, `${p.name} (no account yet) is a member`, { placeholder: { member_id: p.memberId, name: p.name } });
  }

  const rows = await tx.select().from(expenses).where(eq(expenses.groupId, groupId)).orderBy(asc(expenses.createdAt), asc(expenses.expenseId));
  const shares = await sharesOf(
    tx,
    rows.map((r) => r.expenseId),
  );
  const answers = rows.length
    ? await tx
        .select()
        .from(expenseResponses)
        .where(
          inArray(
            expenseResponses.expenseId,
            rows.map((r) => r.expenseId),
          ),
        )
        .orderBy(asc(expenseResponses.respondedAt))
    : [];
  const answersTo = Map.groupBy(answers, (a) => a.expenseId);
  for (const row of rows) {
    const state = stateOfRow(row, shares.get(row.expenseId) ?? []);
    const snapshot = toSnapshot(state, []);
    event(
      "expense_added",
      row.createdBy,
      row.createdAt,
      `An expense ${AS_IT_STOOD}`,
      { expense: { expense_id: row.expenseId, version: row.version, action: "created", snapshot } },
      state.deleted ? {} : deltasOf(expenseDebts(state.shares, state.kind)),
    );
    for (const r of answersTo.get(row.expenseId) ?? []) {
      event(r.action === "confirm" ? "expense_confirmed" : "expense_disputed", r.agentId, r.respondedAt, `An answer ${AS_IT_STOOD}`, {
        response: { expense_id: row.expenseId, action: r.action, reason: r.reason, version: r.version },
      });
    }
  }

  const paid = await tx.select().from(payments).where(eq(payments.groupId, groupId)).orderBy(asc(payments.createdAt), asc(payments.paymentId));
  for (const p of paid) {
    event("payment_recorded", p.createdBy, p.createdAt, `A payment ${AS_IT_STOOD}`, paymentData(p), p.state === "confirmed" ? deltasOf([paymentDebt(p)]) : {});
  }

  // Those who left, last: their expenses and payments named them as members.
  for (const m of members) {
    if (m.leftAt !== null) event("member_left", m.agentId, m.leftAt, `@${m.handle} left`, { left: m.agentId, owner: null });
  }
  return out;
}
