// Placeholder members: friends without an account, added by name, splitting and paying like any member, and
// taken over (claimed) by whoever opens their one-time link.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { balancesOf, failure, groupOf, inboxItems } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

let counter = 0;
async function people(n: number): Promise<Agent[]> {
  const p = `ph${++counter}`;
  const out: Agent[] = [];
  for (let i = 0; i < n; i++) out.push(await s.register(`${p}-${"abcdefgh"[i]}`));
  return out;
}

async function placeholder(groupId: string, key: string, name: string) {
  const r = await s.ok("create_group_invite", { group_id: groupId, name }, key);
  return { memberId: r.invite.placeholder.member_id as string, code: r.invite.code as string, url: r.invite.placeholder.claim_url as string, r };
}

const sum = (b: Record<string, number | undefined>) => Object.values(b).reduce((x: number, y) => x + (y ?? 0), 0);

describe("placeholder members", () => {
  test("added by name, listed by get_group with agent null, split with by member_id, counted in balances and settle-up", async () => {
    const [a, b] = await people(2);
    const g = await groupOf(s, [a!, b!]);
    const dana = await placeholder(g.group_id, a!.key, "Dana Smith");
    expect(dana.r.invite.kind).toBe("placeholder");
    expect(dana.code).toStartWith("claim-");
    expect(dana.url).toEndWith(`/claim/${dana.code}`);
    expect(dana.r.message).toContain(dana.url);

    const group = (await s.ok("get_group", { group_id: g.group_id }, b!.key)).group;
    const entry = group.members.find((m: any) => m.member_id === dana.memberId);
    expect(entry).toMatchObject({ agent: null, name: "Dana Smith", role: "member", balance_minor: 0 });
    expect(group.members.find((m: any) => m.agent?.handle === a!.handle).member_id).toBe(a!.agent_id);
    expect(group.member_count).toBe(3);

    // Dana owes a third of 30.00; then Dana pays 12.00 split between Dana and b.
    const e1 = await s.ok(
      "add_expense",
      {
        group_id: g.group_id,
        description: "Dinner",
        amount: "30.00",
        split: { mode: "equal", among: [{ handle: a!.handle }, { handle: b!.handle }, { member_id: dana.memberId }] },
      },
      a!.key,
    );
    const danaShare = e1.expense.shares.find((x: any) => x.member_id === dana.memberId);
    expect(danaShare).toMatchObject({ handle: dana.memberId, amount_minor: 1000 });
    await s.ok(
      "add_expense",
      {
        group_id: g.group_id,
        description: "Taxi",
        amount: "12.00",
        paid_by: [{ member_id: dana.memberId, amount: "12.00" }],
        split: { mode: "equal", among: [{ member_id: dana.memberId }, { member_id: b!.agent_id }] },
      },
      b!.key,
    );
    const bal = await balancesOf(s, a!.key, g.group_id);
    expect(bal).toEqual({ [a!.handle]: 2000, [b!.handle]: -1600, [dana.memberId]: -400 });
    expect(sum(bal)).toBe(0);
    const full = await s.ok("get_balances", { group_id: g.group_id }, a!.key);
    const d = full.members.find((m: any) => m.member_id === dana.memberId);
    expect(d).toMatchObject({ placeholder: true, agent: { agent_id: dana.memberId, display_name: "Dana Smith" } });
    expect(full.settle_up.some((t: any) => t.from.agent_id === dana.memberId)).toBe(true);
    // A placeholder has no inbox: nobody got an item for it, and unknown member_ids are refused.
    const bad = await failure(
      s,
      "add_expense",
      { group_id: g.group_id, description: "X", amount: "1.00", split: { mode: "equal", among: [{ member_id: crypto.randomUUID() }] } },
      a!.key,
    );
    expect(bad).toMatchObject({ code: "VALIDATION_ERROR", path: "split.among[0].member_id" });
    const both = await failure(
      s,
      "add_expense",
      { group_id: g.group_id, description: "X", amount: "1.00", split: { mode: "equal", among: [{ handle: a!.handle, member_id: a!.agent_id }] } },
      a!.key,
    );
    expect(both.code).toBe("VALIDATION_ERROR");
  });

  test("join_group with the claim code takes the placeholder over: its balance becomes the agent's exactly, with one summing-up item", async () => {
    const [a, b, c] = await people(3);
    const g = await groupOf(s, [a!, b!]);
    const dana = await placeholder(g.group_id, a!.key, "Dana");
    const e = await s.ok(
      "add_expense",
      {
        group_id: g.group_id,
        description: "Rent",
        amount: "90.00",
        split: { mode: "equal", among: [{ handle: a!.handle }, { handle: b!.handle }, { member_id: dana.memberId }] },
      },
      a!.key,
    );
    await s.ok(
      "add_expense",
      {
        group_id: g.group_id,
        description: "Wine",
        amount: "8.00",
        paid_by: [{ member_id: dana.memberId, amount: "8.00" }],
        split: { mode: "equal", among: [{ handle: b!.handle }] },
      },
      a!.key,
    );
    const before = await balancesOf(s, a!.key, g.group_id);
    expect(before[dana.memberId]).toBe(-3000 + 800);

    const joined = await s.ok("join_group", { invite_code: dana.code }, c!.key);
    expect(joined.joined).toBe(true);
    const after = await balancesOf(s, a!.key, g.group_id);
    expect(after).toEqual({ [a!.handle]: before[a!.handle]!, [b!.handle]: before[b!.handle]!, [c!.handle]: before[dana.memberId]! });
    expect(sum(after)).toBe(0);
    const group = (await s.ok("get_group", { group_id: g.group_id }, c!.key)).group;
    expect(group.members.map((m: any) => m.agent?.handle ?? null).sort()).toEqual([a!.handle, b!.handle, c!.handle].sort());
    expect(group.my_balance_minor).toBe(-2200);
    // The history now names c: shares, payers, and c can confirm or dispute like any participant.
    const got = await s.ok("get_expense", { expense_id: e.expense.expense_id }, c!.key);
    expect(got.expense.shares.find((x: any) => x.handle === c!.handle)).toMatchObject({ member_id: c!.agent_id, amount_minor: 3000 });
    const items = await inboxItems(s, c!.key, "ledger.placeholder_claimed");
    expect(items).toHaveLength(1);
    expect(items[0].requires_action).toBe(true);
    expect(items[0].payload).toMatchObject({ member_id: dana.memberId, name: "Dana", your_shares_minor: 3000, you_paid_minor: 800, balance_minor: -2200 });
    expect(items[0].payload.expense_ids).toHaveLength(2);
    expect(items[0].summary_md).toContain("your shares 30.00 EUR, you paid 8.00 EUR, balance -22.00 EUR.");
    // c was never told of the expenses one by one (the placeholder had no inbox).
    expect(await inboxItems(s, c!.key, "ledger.expense_added")).toHaveLength(0);
    await s.ok("respond_expense", { expense_id: e.expense.expense_id, action: "confirm" }, c!.key);
    expect((await inboxItems(s, c!.key, "ledger.placeholder_claimed"))[0].resolved).toBe(false);
    await s.ok(
      "respond_expense",
      { expense_id: items[0].payload.expense_ids.find((id: string) => id !== e.expense.expense_id), action: "dispute", reason: "I paid 6" },
      c!.key,
    );
    expect((await inboxItems(s, c!.key, "ledger.placeholder_claimed"))[0].resolved).toBe(true);
    // The others heard that c joined.
    expect((await inboxItems(s, a!.key, "group.member_joined")).some((i: any) => i.payload.member.handle === c!.handle)).toBe(true);

    // One-time: the code is spent.
    const again = await failure(s, "join_group", { invite_code: dana.code }, b!.key);
    expect(again.code).toBe("NOT_FOUND");
  });

  test("a current member cannot claim a placeholder (CONFLICT), and nothing moves", async () => {
    const [a, b] = await people(2);
    const g = await groupOf(s, [a!, b!]);
    const dana = await placeholder(g.group_id, a!.key, "Dana");
    await s.ok(
      "add_expense",
      { group_id: g.group_id, description: "Bread", amount: "4.00", split: { mode: "equal", among: [{ member_id: dana.memberId }] } },
      a!.key,
    );
    const r = await failure(s, "join_group", { invite_code: dana.code }, b!.key);
    expect(r.code).toBe("CONFLICT");
    expect(await balancesOf(s, a!.key, g.group_id)).toEqual({ [a!.handle]: 400, [b!.handle]: 0, [dana.memberId]: -400 });
  });

  test("create_group_invite takes handle or name, not both; names follow the display-name rules", async () => {
    const [a, b] = await people(2);
    const g = await groupOf(s, [a!]);
    expect((await failure(s, "create_group_invite", { group_id: g.group_id, name: "Dana", handle: b!.handle }, a!.key)).code).toBe("VALIDATION_ERROR");
    expect((await failure(s, "create_group_invite", { group_id: g.group_id, name: "" }, a!.key)).path).toBe("name");
    expect((await failure(s, "create_group_invite", { group_id: g.group_id, name: "x".repeat(81) }, a!.key)).path).toBe("name");
    expect((await failure(s, "create_group_invite", { group_id: g.group_id, name: "Dana", max_uses: 3 }, a!.key)).path).toBe("max_uses");
    // Someone outside the group learns nothing.
    expect((await failure(s, "create_group_invite", { group_id: g.group_id, name: "Dana" }, b!.key)).code).toBe("NOT_FOUND");
  });

  test("guessing claim codes is rate-limited like other codes", async () => {
    const [a] = await people(1);
    let last = "";
    for (let i = 0; i < 21; i++) last = (await failure(s, "join_group", { invite_code: `claim-${"x".repeat(20)}${i}` }, a!.key)).code;
    expect(last).toBe("RATE_LIMITED");
  });

  test("payments with a placeholder: one it made, recorded by its payee, counts at once; one to it waits for whoever claims it", async () => {
    const [a, b, c] = await people(3);
    const g = await groupOf(s, [a!, b!]);
    const dana = await placeholder(g.group_id, a!.key, "Dana");
    await s.ok(
      "add_expense",
      { group_id: g.group_id, description: "Tickets", amount: "20.00", split: { mode: "equal", among: [{ member_id: dana.memberId }] } },
      a!.key,
    );
    const got = await s.ok("record_payment", { group_id: g.group_id, from_member_id: dana.memberId, amount: "5.00" }, a!.key);
    expect(got.payment).toMatchObject({ state: "confirmed", from: { agent_id: dana.memberId, display_name: "Dana" }, to: { handle: a!.handle } });
    expect(await balancesOf(s, a!.key, g.group_id)).toEqual({ [a!.handle]: 1500, [b!.handle]: 0, [dana.memberId]: -1500 });
    const toDana = await s.ok("record_payment", { group_id: g.group_id, to_member_id: dana.memberId, amount: "1.00" }, b!.key);
    expect(toDana.payment.state).toBe("pending");
    expect((await failure(s, "record_payment", { group_id: g.group_id, to: a!.handle, to_member_id: dana.memberId, amount: "1.00" }, b!.key)).path).toBe(
      "to_member_id",
    );
    expect((await failure(s, "record_payment", { group_id: g.group_id, to_member_id: crypto.randomUUID(), amount: "1.00" }, b!.key)).path).toBe("to_member_id");
    await s.ok("join_group", { invite_code: dana.code }, c!.key);
    const [item] = await inboxItems(s, c!.key, "ledger.placeholder_claimed");
    expect(item.payload.payment_ids_to_confirm).toEqual([toDana.payment.payment_id]);
    expect(item.summary_md).toContain("1 payment to you waits for your confirmation");
    // The claimer now is the payee of the pending payment and confirms it like any.
    await s.ok("respond_payment", { payment_id: toDana.payment.payment_id, action: "confirm" }, c!.key);
    expect(await balancesOf(s, a!.key, g.group_id)).toEqual({ [a!.handle]: 1500, [b!.handle]: 100, [c!.handle]: -1600 });
  });

  test("the owner removes a placeholder with a zero balance by member_id; its claim code then stops working", async () => {
    const [a, b] = await people(2);
    const g = await groupOf(s, [a!]);
    const dana = await placeholder(g.group_id, a!.key, "Dana");
    await s.ok(
      "add_expense",
      { group_id: g.group_id, description: "Pen", amount: "2.00", split: { mode: "equal", among: [{ member_id: dana.memberId }] } },
      a!.key,
    );
    const owing = await failure(s, "remove_group_member", { group_id: g.group_id, member_id: dana.memberId }, a!.key);
    expect(owing.code).toBe("CONFLICT");
    await s.ok("record_payment", { group_id: g.group_id, from_member_id: dana.memberId, amount: "2.00" }, a!.key);
    const left = (await s.ok("remove_group_member", { group_id: g.group_id, member_id: dana.memberId }, a!.key)).group;
    expect(left.members.map((m: any) => m.member_id)).toEqual([a!.agent_id]);
    expect((await failure(s, "join_group", { invite_code: dana.code }, b!.key)).code).toBe("NOT_FOUND");
  });

  test("the claim code is shown once: stored only as a digest, and a retry with the same key is not replayed", async () => {
    const [a] = await people(1);
    const g = await groupOf(s, [a!]);
    const args = { group_id: g.group_id, name: "Dana", idempotency_key: `k-${crypto.randomUUID()}` };
    const first = await s.call("create_group_invite", args, a!.key);
    expect(first.status).toBe(200);
    const code: string = first.body.data.invite.code;
    const again = await s.call("create_group_invite", args, a!.key);
    expect(again.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    // Nowhere in the database (its file and write-ahead log) is the code in clear.
    const files = [join(s.dir, "svc.db"), join(s.dir, "svc.db-wal")].filter((f) => existsSync(f));
    if (files.length) for (const f of files) expect(readFileSync(f).includes(code)).toBe(false);
    expect((await s.ok("get_group", { group_id: g.group_id }, a!.key)).group.member_count).toBe(2);
  });

  test("a group holds at most 50 unclaimed placeholders", async () => {
    const [a] = await people(1);
    const g = await groupOf(s, [a!]);
    for (let i = 0; i < 50; i++) await s.ok("create_group_invite", { group_id: g.group_id, name: `Friend ${i}` }, a!.key);
    const refused = await failure(s, "create_group_invite", { group_id: g.group_id, name: "One more" }, a!.key);
    expect(refused).toMatchObject({ code: "CONFLICT", details: { limit: 50 } });
  }, 60_000);

  test("register_agent with the claim code as invite_code makes the account and takes the placeholder over in one step", async () => {
    const [a] = await people(1);
    const g = await groupOf(s, [a!]);
    const dana = await placeholder(g.group_id, a!.key, "Dana");
    await s.ok(
      "add_expense",
      { group_id: g.group_id, description: "Cake", amount: "9.00", split: { mode: "equal", among: [{ member_id: dana.memberId }] } },
      a!.key,
    );
    const d = await s.register(`ph${++counter}-dana`, { invite_code: dana.code });
    expect(await balancesOf(s, a!.key, g.group_id)).toEqual({ [a!.handle]: 900, [d.handle]: -900 });
    expect(await inboxItems(s, d.key, "ledger.placeholder_claimed")).toHaveLength(1);
  });
});
