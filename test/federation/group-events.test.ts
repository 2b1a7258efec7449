// A group's ledger as one chain of events on its home server: every ledger change appends an event numbered after the
// last, naming the hash of the one before it and the balance changes it made. Read here from the server's own
// database file, as another server or an operator would check it with the same code (server/domain/ledger/events).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { startServers, type FedServer } from "./servers.ts";
import { openDb } from "../../db/client.ts";
import { sealChains } from "../../server/jobs/seal-chains.ts";
import { canonical, GENESIS, sha256, verifyChain, type GroupEvent, type GroupEventBody } from "../../server/domain/ledger/events/chain.ts";

let close: () => Promise<void>;
let A: FedServer;

beforeAll(async () => {
  const started = await startServers(1);
  A = started.servers[0]!;
  close = started.close;
}, 60_000);
afterAll(() => close?.());

/**
 * The group's events once sealed: a group no other server follows has its events numbered as they commit and hashed
 * by the job that seals chains; it runs here on the server's file, as the server's job runner would run it.
 */
async function sealedEventsOf(groupId: string): Promise<(GroupEvent & { seq: number })[]> {
  expect(eventsOf(groupId).some((e) => e.hash === "")).toBe(true);
  const db = await openDb({ url: `file:${A.db}` });
  try {
    await db.tx((tx) => sealChains.run(tx, new Date(), undefined));
  } finally {
    await db.close();
  }
  const events = eventsOf(groupId);
  expect(events.every((e) => e.hash !== "")).toBe(true);
  return events;
}

function eventsOf(groupId: string): (GroupEvent & { seq: number })[] {
  const db = new Database(A.db, { readonly: true });
  try {
    return db.query("SELECT seq, body, hash FROM group_events WHERE group_id = ? ORDER BY seq").all(groupId) as any[];
  } finally {
    db.close();
  }
}
const bodyOf = (e: GroupEvent): GroupEventBody => JSON.parse(e.body);

/** Every member's balance as the chain's balance changes add up. */
function balancesOfChain(events: GroupEvent[]): Map<string, bigint> {
  const m = new Map<string, bigint>();
  for (const e of events) for (const [id, v] of Object.entries(bodyOf(e).deltas)) m.set(id, (m.get(id) ?? 0n) + BigInt(v));
  return m;
}

describe("a group's event chain on its home server", () => {
  test("every ledger change appends one event in order; the chain holds, sums to zero, and adds up to the balances", async () => {
    const alice = await A.register("alice");
    const bob = await A.register("bob");
    const carol = await A.register("carol");
    const { group } = await A.ok("create_group", { name: "Lisbon", currency: "EUR" }, alice.key);
    const g = group.group_id;
    const { invite } = await A.ok("create_group_invite", { group_id: g, max_uses: 5 }, alice.key);
    await A.ok("join_group", { invite_code: invite.code }, bob.key);
    await A.ok("join_group", { invite_code: invite.code }, carol.key);

    const { expense: dinner } = await A.ok("add_expense", { group_id: g, description: "Dinner", amount: "60.00" }, alice.key);
    await A.ok(
      "add_expense",
      {
        group_id: g,
        description: "Taxi",
        amount: "10.00",
        paid_by: [{ handle: "bob", amount: "10.00" }],
        split: {
          mode: "shares",
          among: [
            { handle: "alice", value: 1 },
            { handle: "carol", value: 2 },
          ],
        },
      },
      bob.key,
    );
    await A.ok("update_expense", { expense_id: dinner.expense_id, expected_version: 1, amount: "61.00" }, alice.key);
    await A.ok("respond_expense", { expense_id: dinner.expense_id, action: "dispute", reason: "I had no wine" }, bob.key);
    await A.ok("delete_expense", { expense_id: dinner.expense_id }, alice.key);
    await A.ok("restore_expense", { expense_id: dinner.expense_id }, alice.key);
    const { payment } = await A.ok("record_payment", { group_id: g, to: "alice", amount: "5.00" }, bob.key);
    await A.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, alice.key);
    await A.ok("record_payment", { group_id: g, from: "carol", amount: "3.00" }, alice.key);

    const events = await sealedEventsOf(g);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(verifyChain(g, events)).toBeNull();
    expect(bodyOf(events[0]!)).toMatchObject({ seq: 1, prev_hash: GENESIS, type: "group_created", actor_id: alice.agent_id });
    const types = events.map((e) => bodyOf(e).type);
    for (const t of ["expense_added", "expense_updated", "expense_deleted", "expense_restored", "payment_recorded", "payment_confirmed"]) {
      expect(types).toContain(t);
    }
    // The balances the server answers are what the chain's changes add up to, member by member.
    const { members } = await A.ok("get_balances", { group_id: g }, alice.key);
    const chain = balancesOfChain(events);
    for (const m of members) expect(chain.get(m.member.member_id) ?? 0n).toBe(BigInt(m.balance_minor));
    expect([...chain.values()].reduce((a, b) => a + b, 0n)).toBe(0n);
    // An expense's event carries its state as stored; a payment's, its row.
    const added = events.map(bodyOf).find((b) => b.type === "expense_added")!;
    expect(added.data).toMatchObject({ expense: { expense_id: dinner.expense_id, version: 1, snapshot: { amount_minor: 6000 } } });
  }, 30_000);

  test("changes of one group at the same moment never fork the chain", async () => {
    const dan = await A.register("dan");
    const { group } = await A.ok("create_group", { name: "Flat", currency: "EUR" }, dan.key);
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => A.ok("add_expense", { group_id: group.group_id, description: `Item ${i}`, amount: "1.00" }, dan.key)),
    );
    const events = await sealedEventsOf(group.group_id);
    expect(events).toHaveLength(13);
    expect(verifyChain(group.group_id, events)).toBeNull();
  }, 30_000);

  test("a rewritten event shows: its own hash, or once rehashed, the next event's link to it", async () => {
    const erin = await A.register("erin");
    const frank = await A.register("frank");
    const { group } = await A.ok("create_group", { name: "Boat", currency: "EUR" }, erin.key);
    const g = group.group_id;
    const { invite } = await A.ok("create_group_invite", { group_id: g, max_uses: 1 }, erin.key);
    await A.ok("join_group", { invite_code: invite.code }, frank.key);
    for (const amount of ["30.00", "12.00", "7.50"]) await A.ok("add_expense", { group_id: g, description: "Fuel", amount }, erin.key);
    const events = await sealedEventsOf(g);
    const i = events.findIndex((e) => bodyOf(e).type === "expense_added");
    const forged = { ...bodyOf(events[i]!), data: { rewritten: true } };
    // The body changed, the hash kept: the event itself fails.
    const changed = events.map((e, j) => (j === i ? { ...e, body: canonical(forged) } : e));
    expect(verifyChain(g, changed)).toMatchObject({ seq: i + 1, problem: "its hash is not its body's" });
    // Rehashed too: the event after it no longer follows it.
    const rehashed = events.map((e, j) => (j === i ? { body: canonical(forged), hash: sha256(canonical(forged)) } : e));
    expect(verifyChain(g, rehashed)).toMatchObject({ seq: i + 2, problem: "it does not follow the event before it" });
    // Balance changes that do not sum to zero, sealed properly, are refused as such.
    const unbalanced = { ...bodyOf(events[i]!), deltas: { [erin.agent_id]: "100" } };
    const sealed: GroupEvent[] = [...events.slice(0, i), { body: canonical(unbalanced), hash: sha256(canonical(unbalanced)) }];
    expect(verifyChain(g, sealed)).toMatchObject({ seq: i + 1, problem: "its balance changes do not sum to zero" });
    // An event left out: the next one's seq says so.
    expect(verifyChain(g, [...events.slice(0, i), ...events.slice(i + 1)])).toMatchObject({ seq: i + 1 });
  }, 30_000);
});
