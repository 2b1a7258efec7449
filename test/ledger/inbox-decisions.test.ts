// The inbox of a real group of friends: no confirmation for a zero share, many expenses answered in one call,
// confirmations summed up per group in `top` and the digest, and get_inbox requires_action=true.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { failure, groupWith, inboxItems } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ logLevel: "error" });
});
afterAll(() => s.stop());

test("a participant with nothing at stake (zero share, paid nothing) gets no confirmation item", async () => {
  const g = await groupWith(s, ["zs-a", "zs-b", "zs-c"]);
  const [a, b, c] = g.members;
  await s.ok(
    "add_expense",
    {
      group_id: g.group_id,
      description: "Taxi",
      amount: "10.00",
      split: {
        mode: "exact",
        among: [
          { handle: "zs-a", value: "4.00" },
          { handle: "zs-b", value: "6.00" },
          { handle: "zs-c", value: "0" },
        ],
      },
    },
    a!.key,
  );
  expect(await inboxItems(s, b!.key, "ledger.expense_added")).toHaveLength(1);
  // one expense of a group to confirm: top shows it as it is
  expect((await s.ok("get_me", {}, b!.key)).inbox.top[0]).toStartWith("@zs-a added “Taxi”");
  expect(await inboxItems(s, c!.key, "ledger.expense_added")).toEqual([]);
});

test("respond_expense expense_ids answers many at once, per id; top and the digest show one line per group", async () => {
  const g = await groupWith(s, ["bulk-a", "bulk-b"], "EUR", "Lisbon trip");
  const [a, b] = g.members;
  const ids: string[] = [];
  for (let i = 0; i < 6; i++)
    ids.push((await s.ok("add_expense", { group_id: g.group_id, description: `Coffee ${i}`, amount: "3.00" }, a!.key)).expense.expense_id);

  // top: one line for the group, not six
  const me = await s.ok("get_me", {}, b!.key);
  const lines = me.inbox.top.filter((l: string) => l.includes("to confirm"));
  expect(lines).toEqual([expect.stringContaining("6 expenses in “Lisbon trip” (quoted) to confirm")]);
  expect(me.inbox.top.filter((l: string) => l.includes("Coffee"))).toEqual([]);

  // the digest likewise, while every item (and so every id) is still listed
  const read = await s.ok("get_inbox", {}, b!.key);
  expect(read.items.filter((i: any) => i.type === "ledger.expense_added")).toHaveLength(6);
  expect(read.digest_md).toContain("6 expenses in “Lisbon trip” (quoted) to confirm");
  expect(read.digest_md).not.toContain("Coffee");

  // read once, the items are seen: a second read shows nothing new, requires_action=true still lists them all
  const again = await s.ok("get_inbox", {}, b!.key);
  expect(again.items).toEqual([]);
  expect(again.requires_action).toBe(6);
  const pending = await s.ok("get_inbox", { requires_action: true }, b!.key);
  expect(pending.items.map((i: any) => i.refs.expense_id).sort()).toEqual([...ids].sort());
  expect(pending.items.every((i: any) => i.seen && i.requires_action && !i.resolved)).toBe(true);
  expect(pending.digest_md).toContain("6 items waiting for a decision");
  // paged with since, and it marks nothing
  const first = await s.ok("get_inbox", { requires_action: true, limit: 4 }, b!.key);
  expect(first.items).toHaveLength(4);
  const rest = await s.ok("get_inbox", { requires_action: true, since: first.next_cursor }, b!.key);
  expect(rest.items).toHaveLength(2);

  // one call: five confirmed, one unknown id refused beside its id, nothing else undone
  const unknown = crypto.randomUUID();
  const res = await s.ok("respond_expense", { expense_ids: [...ids.slice(0, 5), unknown], action: "confirm" }, b!.key);
  expect(res.expense).toBeUndefined();
  expect(res.results.filter((r: any) => r.ok).map((r: any) => r.expense_id)).toEqual(ids.slice(0, 5));
  expect(res.results.find((r: any) => r.expense_id === unknown)).toEqual({
    expense_id: unknown,
    ok: false,
    error: expect.objectContaining({ code: "NOT_FOUND" }),
  });
  const left = await s.ok("get_inbox", { requires_action: true }, b!.key);
  expect(left.items.map((i: any) => i.refs.expense_id)).toEqual([ids[5]]);
  expect((await s.ok("get_expense", { expense_id: ids[0] }, b!.key)).expense.responses[0].action).toBe("confirm");

  // one of expense_id and expense_ids at least; at most 100 ids
  expect((await failure(s, "respond_expense", { action: "confirm" }, b!.key)).code).toBe("VALIDATION_ERROR");
  const many = Array.from({ length: 101 }, () => crypto.randomUUID());
  expect((await failure(s, "respond_expense", { expense_ids: many, action: "confirm" }, b!.key)).path).toBe("expense_ids");
  // a dispute needs its reason for all of them: refused whole
  expect((await failure(s, "respond_expense", { expense_ids: [ids[5]], action: "dispute" }, b!.key)).path).toBe("reason");
  // both: expense_id answered as ever, the others in results
  const both = await s.ok("respond_expense", { expense_id: ids[5], expense_ids: [ids[5], ids[0]], action: "confirm" }, b!.key);
  expect(both.expense.expense_id).toBe(ids[5]);
  expect(both.results).toEqual([{ expense_id: ids[0], ok: true, state: "active" }]);
  expect((await s.ok("get_inbox", { requires_action: true }, b!.key)).items).toEqual([]);
});
