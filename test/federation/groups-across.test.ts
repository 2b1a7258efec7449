// Groups across servers (docs/federation.md, "The ledger across servers"): a group kept on A with members on B and
// C. A orders every ledger event; B and C keep a read copy fed by A's events, checked on arrival, and answer reads
// from it locally.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;
let C: FedServer;

beforeAll(async () => {
  const started = await startServers(3);
  [A, B, C] = started.servers as [FedServer, FedServer, FedServer];
  close = started.close;
}, 60_000);
afterAll(() => close?.());

/** Each member's balance on a server, by address (handle@host), so that servers' answers compare. */
async function balancesOn(S: FedServer, key: string, groupId: string): Promise<Record<string, number>> {
  const d = await S.ok("get_balances", { group_id: groupId }, key);
  const out: Record<string, number> = {};
  for (const m of d.members) {
    const name: string = m.member.agent?.display_name ?? "";
    const address = /\(([^)]+@[^)]+)\)$/.exec(name)?.[1] ?? `${m.member.agent?.handle}@${S.host}`;
    out[address] = m.balance_minor;
  }
  return out;
}

/** Every item of an agent's inbox, seen or not, from the first. */
const itemsOf = (S: FedServer, key: string) => S.ok("get_inbox", { since: "0", include_seen: true, limit: 100 }, key).then((d) => d.items as any[]);

async function joinFrom(S: FedServer, who: { key: string }, groupId: string): Promise<void> {
  const items = await until(
    () => itemsOf(S, who.key),
    (xs) => xs.some((i) => i.type === "group.invitation" && i.refs.group_id === groupId),
  );
  const item = items.find((i) => i.type === "group.invitation" && i.refs.group_id === groupId);
  expect(item.refs.home).toBe(A.host);
  const res = await S.ok("respond_group_invite", { invite_id: item.refs.invite_id, action: "accept" }, who.key);
  expect(res.group).toBeNull();
  await until(
    () => S.call("get_group", { group_id: groupId }, who.key),
    (r) => r.status === 200,
  );
}

describe("a group on A with members on B and C", () => {
  test("members of other servers join by invitation, and every server's balances agree after each step", async () => {
    const alice = await A.register("alice");
    const bob = await B.register("bob");
    const carol = await C.register("carol");
    const { yOnX: bobOnA } = await connect(A, alice, B, bob);
    const { yOnX: carolOnA } = await connect(A, alice, C, carol);
    const { group } = await A.ok("create_group", { name: "Lisbon", currency: "EUR" }, alice.key);
    const g = group.group_id;
    await A.ok("create_group_invite", { group_id: g, handle: bobOnA }, alice.key);
    await A.ok("create_group_invite", { group_id: g, handle: carolOnA }, alice.key);
    await joinFrom(B, bob, g);
    await joinFrom(C, carol, g);
    const onA = await A.ok("get_group", { group_id: g }, alice.key);
    expect(onA.group.members).toHaveLength(3);

    const agree = async () => {
      const want = await balancesOn(A, alice.key, g);
      expect(Object.values(want).reduce((x, y) => x + y, 0)).toBe(0);
      await until(
        () => balancesOn(B, bob.key, g),
        (got) => JSON.stringify(got) === JSON.stringify(want),
      );
      await until(
        () => balancesOn(C, carol.key, g),
        (got) => JSON.stringify(got) === JSON.stringify(want),
      );
      return want;
    };
    const { expense: dinner } = await A.ok("add_expense", { group_id: g, description: "Dinner", amount: "90.00" }, alice.key);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 6000, [`bob@${B.host}`]: -3000, [`carol@${C.host}`]: -3000 });
    // Bob's own server asks him to confirm, as a local member is asked; his answer goes to A and resolves the item.
    const toConfirm = await until(
      () => itemsOf(B, bob.key),
      (xs) => xs.some((i) => i.type === "ledger.expense_added" && i.refs.expense_id === dinner.expense_id),
    );
    expect(toConfirm.find((i) => i.type === "ledger.expense_added").requires_action).toBe(true);
    await B.ok("respond_expense", { expense_id: dinner.expense_id, action: "confirm" }, bob.key);
    const after = await itemsOf(B, bob.key);
    expect(after.find((i) => i.type === "ledger.expense_added" && i.refs.expense_id === dinner.expense_id).resolved).toBe(true);

    // Bob, on B, adds an expense: it is made on A, and B's answer names the members as B does.
    const carolOnB = (await B.ok("get_group", { group_id: g }, bob.key)).group.members.find((m: any) => m.agent.display_name.includes(`carol@${C.host}`)).agent
      .handle;
    const { expense: taxi } = await B.ok(
      "add_expense",
      {
        group_id: g,
        description: "Taxi",
        amount: "30.00",
        split: {
          mode: "exact",
          among: [
            { handle: "bob", value: "10.00" },
            { handle: carolOnB, value: "20.00" },
          ],
        },
      },
      bob.key,
    );
    expect(taxi.created_by.handle).toBe("bob");
    expect(taxi.paid_by[0].handle).toBe("bob");
    // B applied A's events before answering: bob reads his own expense at once.
    expect((await B.ok("get_expense", { expense_id: taxi.expense_id }, bob.key)).expense.amount_minor).toBe(3000);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 6000, [`bob@${B.host}`]: -1000, [`carol@${C.host}`]: -5000 });

    // Carol, on C, disputes it, then pays Alice; Alice confirms on A.
    await until(
      () => C.call("get_expense", { expense_id: taxi.expense_id }, carol.key),
      (r) => r.status === 200,
    );
    const disputed = await C.ok("respond_expense", { expense_id: taxi.expense_id, action: "dispute", reason: "I walked" }, carol.key);
    expect(disputed.expense.state).toBe("disputed");
    await until(
      () => B.ok("get_expense", { expense_id: taxi.expense_id }, bob.key),
      (d) => d.expense.state === "disputed",
    );
    const aliceOnC = (await C.ok("get_group", { group_id: g }, carol.key)).group.members.find((m: any) => m.agent.display_name.includes(`alice@${A.host}`))
      .agent.handle;
    const { payment } = await C.ok("record_payment", { group_id: g, to: aliceOnC, amount: "50.00" }, carol.key);
    expect(payment.state).toBe("pending");
    await until(
      () => A.ok("list_payments", { group_id: g }, alice.key),
      (d) => d.payments.some((p: any) => p.payment_id === payment.payment_id),
    );
    await A.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, alice.key);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 1000, [`bob@${B.host}`]: -1000, [`carol@${C.host}`]: 0 });
    await until(
      () => itemsOf(C, carol.key),
      (xs) => xs.some((i) => i.type === "ledger.payment_confirmed" && i.refs.payment_id === payment.payment_id),
    );

    // Bob pays Alice back, recorded by him on B; Alice confirms on A, and bob hears of it on B.
    const aliceOnB = (await B.ok("get_group", { group_id: g }, bob.key)).group.members.find((m: any) => m.agent.display_name.includes(`alice@${A.host}`)).agent
      .handle;
    const { payment: back } = await B.ok("record_payment", { group_id: g, to: aliceOnB, amount: "10.00" }, bob.key);
    expect(back).toMatchObject({ state: "pending" });
    const item = await until(
      () => itemsOf(A, alice.key),
      (xs) => xs.some((i) => i.type === "ledger.payment_to_confirm" && i.refs.payment_id === back.payment_id),
    );
    expect(item.length).toBeGreaterThan(0);
    await A.ok("respond_payment", { payment_id: back.payment_id, action: "confirm" }, alice.key);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 0, [`bob@${B.host}`]: 0, [`carol@${C.host}`]: 0 });
    await until(
      () => itemsOf(B, bob.key),
      (xs) => xs.some((i) => i.type === "ledger.payment_confirmed" && i.refs.payment_id === back.payment_id),
    );
  }, 60_000);
});
