// Property test of placeholder members (friends with no account, in splits and as payers): over random sequences
// of expenses (added, changed, deleted) among agents and placeholders, every balance equals a naive recomputation
// from list_expenses, the balances sum to zero and the settle-up plan zeroes them; and when the placeholders are
// claimed, each claiming agent's balance is exactly the placeholder's, everyone else's unchanged.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { groupWith } from "./ledger-fixtures.ts";

const AGENTS = 2;
const PLACEHOLDERS = 2;
const MEMBERS = AGENTS + PLACEHOLDERS;
const RUNS = 12;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let counter = 0;

interface World {
  groupId: string;
  agents: Agent[];
  /** Member ids in member order: the agents', then the placeholders'. */
  ids: string[];
  codes: string[];
  expenses: string[];
}

/** Names member i as a split or payer entry: agents by handle or by member_id, placeholders by member_id. */
const ref = (w: World, i: number, byId: boolean) => (i < AGENTS && !byId ? { handle: w.agents[i]!.handle } : { member_id: w.ids[i]! });

/** Balances by member id from get_balances, checked against a naive sum of list_expenses and against settle-up. */
async function checkedBalances(w: World): Promise<Map<string, number>> {
  const key = w.agents[0]!.key;
  const b = await s.ok("get_balances", { group_id: w.groupId }, key);
  const got = new Map<string, number>(b.members.map((m: any) => [m.member_id, m.balance_minor]));
  const naive = new Map<string, number>();
  const add = (id: string, v: number) => naive.set(id, (naive.get(id) ?? 0) + v);
  const list = (await s.ok("list_expenses", { group_id: w.groupId, limit: 100 }, key)).expenses;
  for (const e of list) {
    if (e.deleted) continue;
    for (const p of e.paid_by) add(p.member_id, p.amount_minor);
    for (const x of e.shares) add(x.member_id, -x.amount_minor);
  }
  for (const id of new Set([...got.keys(), ...naive.keys()])) expect(got.get(id) ?? 0).toBe(naive.get(id) ?? 0);
  expect([...got.values()].reduce((a, v) => a + v, 0)).toBe(0);
  const settled = new Map(got);
  for (const t of b.settle_up) {
    settled.set(t.from.agent_id, settled.get(t.from.agent_id)! + t.amount_minor);
    settled.set(t.to.agent_id, settled.get(t.to.agent_id)! - t.amount_minor);
  }
  for (const v of settled.values()) expect(v).toBe(0);
  return got;
}

const member = fc.integer({ min: 0, max: MEMBERS - 1 });
const subset = fc.uniqueArray(member, { minLength: 1, maxLength: MEMBERS });
const step = fc.oneof(
  fc.record({
    kind: fc.constant("add" as const),
    by: fc.integer({ min: 0, max: AGENTS - 1 }),
    amount: fc.integer({ min: 1, max: 100_000 }),
    among: subset,
    payers: subset,
    byId: fc.boolean(),
    shares: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("update" as const), which: fc.nat(), payer: member, among: subset }),
  fc.record({ kind: fc.constant("delete" as const), which: fc.nat() }),
);

test("balances with placeholders in splits and as payers sum to zero, match the expenses, settle, and pass exactly to whoever claims them", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 10 }), async (steps) => {
      const n = ++counter;
      const g = await groupWith(
        s,
        Array.from({ length: AGENTS }, (_, i) => `pp${n}-${"ab"[i]}`),
      );
      const w: World = { groupId: g.group_id, agents: g.members, ids: g.members.map((m) => m.agent_id), codes: [], expenses: [] };
      for (let i = 0; i < PLACEHOLDERS; i++) {
        const r = await s.ok("create_group_invite", { group_id: w.groupId, name: `Friend ${i}` }, w.agents[0]!.key);
        w.ids.push(r.invite.placeholder.member_id);
        w.codes.push(r.invite.code);
      }
      for (const st of steps) {
        if (st.kind === "add") {
          const each = Math.floor(st.amount / st.payers.length);
          const paid = st.payers.map((_, i) => (i === 0 ? st.amount - each * (st.payers.length - 1) : each)).filter((v) => v > 0);
          const split = st.shares
            ? { mode: "shares", among: st.among.map((i) => ({ ...ref(w, i, st.byId), value: i + 1 })) }
            : { mode: "equal", among: st.among.map((i) => ref(w, i, st.byId)) };
          const r = await s.ok(
            "add_expense",
            {
              group_id: w.groupId,
              description: "Random",
              amount_minor: st.amount,
              paid_by: st.payers.slice(0, paid.length).map((i, k) => ({ ...ref(w, i, st.byId), amount_minor: paid[k]! })),
              split,
            },
            w.agents[st.by]!.key,
          );
          w.expenses.push(r.expense.expense_id);
        } else if (w.expenses.length) {
          const id = w.expenses[st.which % w.expenses.length]!;
          const e = (await s.ok("get_expense", { expense_id: id }, w.agents[0]!.key)).expense;
          if (e.deleted) continue;
          if (st.kind === "delete") await s.ok("delete_expense", { expense_id: id }, w.agents[0]!.key);
          else
            await s.ok(
              "update_expense",
              {
                expense_id: id,
                expected_version: e.version,
                paid_by: [{ ...ref(w, st.payer, true), amount_minor: e.amount_minor }],
                split: { mode: "equal", among: st.among.map((i) => ref(w, i, false)) },
              },
              w.agents[0]!.key,
            );
        }
        await checkedBalances(w);
      }
      // Each placeholder is claimed by a new agent: its balance becomes theirs exactly.
      let before = await checkedBalances(w);
      for (let i = 0; i < PLACEHOLDERS; i++) {
        const claimer = await s.register(`pp${n}-c${i}`);
        await s.ok("join_group", { invite_code: w.codes[i]! }, claimer.key);
        const after = await checkedBalances(w);
        const ph = w.ids[AGENTS + i]!;
        expect(after.has(ph)).toBe(false);
        expect(after.get(claimer.agent_id) ?? 0).toBe(before.get(ph) ?? 0);
        for (const [id, v] of before) if (id !== ph) expect(after.get(id) ?? 0).toBe(v);
        before = after;
      }
    }),
    { numRuns: RUNS },
  );
}, 240_000);
