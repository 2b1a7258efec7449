// A group made before svc kept each group's chain of events (before migration 0033_group_events; made here by
// removing a group's events from A's database, as that release left them, and changing it once more): an agent of
// another server can still be invited. A builds the group's chain from what it holds (from-state.ts), and B's copy,
// built from those events alone, answers with the same expenses and balances as A.
import { expect, test } from "bun:test";
import { verifyChain } from "../../server/domain/ledger/events/chain.ts";
import { connect, onFile, serversForFile, until, type FedServer } from "./servers.ts";

let A: FedServer;
let B: FedServer;
serversForFile(2, (s) => ([A, B] = s as [FedServer, FedServer]));

/** Each member's balance, by display name without the address a member of another server's name ends with. */
async function balancesOn(S: FedServer, key: string, groupId: string): Promise<Record<string, number>> {
  const d = await S.ok("get_balances", { group_id: groupId }, key);
  return Object.fromEntries((d.members as any[]).map((m) => [String(m.member.name).replace(/ \([^)]*@[^)]*\)$/, ""), m.balance_minor]));
}

const expensesOn = async (S: FedServer, key: string, groupId: string) =>
  ((await S.ok("list_expenses", { group_id: groupId, include_deleted: true, limit: 100 }, key)).expenses as any[])
    .map((e) => `${e.description.untrusted_content} ${e.amount_minor} v${e.version}${e.deleted ? " deleted" : ""} ${e.state}`)
    .sort();

test("a group made before the chain takes a member of another server; the copy matches the home", async () => {
  const alice = await A.register("alice");
  const carol = await A.register("carol");
  const erin = await A.register("erin");
  const bob = await B.register("bob");
  const { yOnX: bobOnA } = await connect(A, alice, B, bob);

  // The group's life on A before the chain: members (one who left), a placeholder, expenses of every kind of change,
  // an answer, payments confirmed and pending.
  const { group } = await A.ok("create_group", { name: "Old trip", currency: "EUR" }, alice.key);
  const g = group.group_id as string;
  const { invite } = await A.ok("create_group_invite", { group_id: g, max_uses: 2 }, alice.key);
  await A.ok("join_group", { invite_code: invite.code }, carol.key);
  await A.ok("join_group", { invite_code: invite.code }, erin.key);
  await A.ok("leave_group", { group_id: g }, erin.key);
  const { invite: ph } = await A.ok("create_group_invite", { group_id: g, name: "Dana" }, alice.key);
  const dana = ph.placeholder.member_id as string;
  const three = { mode: "equal", among: [{ handle: "alice" }, { handle: "carol" }, { member_id: dana }] };
  const hotel = (await A.ok("add_expense", { group_id: g, description: "Hotel", amount: "90.00", split: three }, alice.key)).expense;
  const dinner = (await A.ok("add_expense", { group_id: g, description: "Dinner", amount: "30.00", split: three }, carol.key)).expense;
  await A.ok("update_expense", { expense_id: dinner.expense_id, expected_version: dinner.version, amount: "36.00" }, carol.key);
  const taxi = (await A.ok("add_expense", { group_id: g, description: "Taxi", amount: "12.00" }, alice.key)).expense;
  await A.ok("delete_expense", { expense_id: taxi.expense_id }, alice.key);
  await A.ok("respond_expense", { expense_id: hotel.expense_id, action: "confirm" }, carol.key);
  const paid = (await A.ok("record_payment", { group_id: g, to: "alice", amount: "10.00" }, carol.key)).payment;
  await A.ok("respond_payment", { payment_id: paid.payment_id, action: "confirm" }, alice.key);
  await A.ok("record_payment", { group_id: g, to: "carol", amount: "5.00" }, alice.key);

  // As that release left it: no events of the group; one change after the upgrade starts its events mid-life.
  onFile(A, (db) => db.run("DELETE FROM group_events WHERE group_id = ?", [g]));
  await A.ok("add_expense", { group_id: g, description: "Museum", amount: "24.00", split: three }, carol.key);
  expect(onFile(A, (db) => db.query("SELECT type FROM group_events WHERE group_id = ? AND seq = 1").get(g))).toEqual({ type: "expense_added" });

  // Bob, on B, is invited and accepts; his server builds its copy from the chain A makes of the group.
  await A.ok("create_group_invite", { group_id: g, handle: bobOnA }, alice.key);
  const items = await until(
    () => B.ok("get_inbox", {}, bob.key).then((d) => d.items as any[]),
    (xs) => xs.some((i) => i.type === "group.invitation"),
  );
  await B.ok("respond_group_invite", { invite_id: items.find((i) => i.type === "group.invitation").refs.invite_id, action: "accept" }, bob.key);
  const onA = await expensesOn(A, alice.key, g);
  expect(onA).toHaveLength(4);
  await until(
    () => B.call("list_expenses", { group_id: g, include_deleted: true, limit: 100 }, bob.key),
    (r) => r.status === 200 && r.body.data.expenses.length === onA.length,
  );
  expect(await expensesOn(B, bob.key, g)).toEqual(onA);

  const home = await balancesOn(A, alice.key, g);
  expect(Object.values(home).reduce((a, b) => a + b, 0)).toBe(0);
  expect(home).toMatchObject({ Dana: -5000 });
  expect(await balancesOn(B, bob.key, g)).toEqual(home);
  expect((await B.ok("list_payments", { group_id: g }, bob.key)).payments.map((p: any) => `${p.amount_minor} ${p.state}`).sort()).toEqual([
    "1000 confirmed",
    "500 pending",
  ]);

  // The chain on A now starts with the group's creation and holds together; it was never sent in another form.
  const chain = onFile(A, (db) => db.query("SELECT seq, body, hash FROM group_events WHERE group_id = ? ORDER BY seq").all(g) as any[]);
  expect(JSON.parse(chain[0].body).type).toBe("group_created");
  expect(verifyChain(g, chain)).toBeNull();

  // And the group goes on across both servers: bob's own expense, from B.
  await B.ok("add_expense", { group_id: g, description: "Ferry", amount: "8.00" }, bob.key);
  const after = await balancesOn(A, alice.key, g);
  expect(Object.values(after).reduce((a, b) => a + b, 0)).toBe(0);
  expect(await balancesOn(B, bob.key, g)).toEqual(after);
}, 90_000);
