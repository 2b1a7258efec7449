// Races: one idempotency key sent 50 times at once has one effect; concurrent update_expense on one version has
// one winner; concurrent accepts of one invitation, or uses of one invite code, join once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { findTool } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { markerRows } from "./db-inspect.ts";
import { agreeToEverything, befriend, ok, register, type Member } from "./world.ts";
import { calibrateKinds, MARKER, markerOf } from "./write-kinds.ts";

let s: TestServer;
let owner: Member;
let member: Member;
let groupId: string;
beforeAll(async () => {
  s = await startTestServer();
  owner = await register(s, "race-owner");
  member = await register(s, "race-member");
  await befriend(s, owner, member);
  groupId = (await ok(s, "create_group", { name: "Race", currency: "EUR", members: [member.handle], idempotency_key: crypto.randomUUID() }, owner.key)).group
    .group_id;
  await agreeToEverything(s, member, new Map(), 1);
}, 30_000);
afterAll(() => s.stop());

const at = <T>(n: number, f: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));
const withoutInbox = (data: any) => JSON.stringify({ ...data, inbox: undefined });

describe("concurrency", () => {
  test("the same idempotency key sent 50 times at once: one effect, 50 identical answers, for every countable write", async () => {
    let strangers = 0;
    const { kinds, skipped } = await calibrateKinds({
      api: s,
      db: s.server.db.raw,
      caller: owner,
      groupId,
      partner: member,
      stranger: () => register(s, `race-stranger-${strangers++}`),
    });
    if (skipped.length) console.warn(`concurrency: kinds skipped: ${skipped.join(", ")}`);
    expect(kinds.map((k) => k.tool.name)).toEqual(expect.arrayContaining(["add_contact", "create_group"]));
    for (const [n, kind] of kinds.entries()) {
      const marker = markerOf(kind.tool.name, 900_000 + n);
      const target = kind.needsStranger ? (await register(s, `race-target-${n}`)).handle : member.handle;
      const args = kind.args(groupId, target, marker, `race-${marker}`);
      const answers = await at(50, () => s.call(kind.tool.name, args, owner.key));
      expect({ tool: kind.tool.name, statuses: [...new Set(answers.map((a) => a.status))] }).toEqual({ tool: kind.tool.name, statuses: [200] });
      expect(new Set(answers.map((a) => withoutInbox(a.body.data))).size).toBe(1);
      expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(49);
      const rows = (await markerRows(s.server.db.raw, MARKER)).get(marker) ?? 0;
      if (kind.rowsPerCall !== null) expect({ tool: kind.tool.name, rows }).toEqual({ tool: kind.tool.name, rows: kind.rowsPerCall });
    }
  }, 30_000);

  test("the same key with different arguments at once: one effect, the others IDEMPOTENCY_KEY_REUSED", async () => {
    const key = crypto.randomUUID();
    const answers = await at(20, (i) => s.call("update_me", { display_name: `Racer ${i}`, idempotency_key: key }, owner.key));
    const winners = answers.filter((a) => a.status === 200);
    expect(winners).toHaveLength(1);
    expect(answers.filter((a) => a.body.error?.code === "IDEMPOTENCY_KEY_REUSED")).toHaveLength(19);
    expect((await ok(s, "get_me", {}, owner.key)).agent.display_name).toBe(winners[0]!.body.data.agent.display_name);
  });

  test("concurrent update_expense with the same expected_version: one winner, the rest CONFLICT", async () => {
    expect(findTool("add_expense") && findTool("update_expense")).toBeDefined();
    const { expense } = await ok(
      s,
      "add_expense",
      { group_id: groupId, description: "Race dinner", amount: "30.00", idempotency_key: crypto.randomUUID() },
      owner.key,
    );
    const answers = await at(20, (i) =>
      s.call(
        "update_expense",
        { expense_id: expense.expense_id, expected_version: expense.version, description: `Race dinner ${i}`, idempotency_key: crypto.randomUUID() },
        i % 2 ? owner.key : member.key,
      ),
    );
    const winners = answers.filter((a) => a.status === 200);
    expect(winners).toHaveLength(1);
    expect(answers.filter((a) => a.body.error?.code === "CONFLICT")).toHaveLength(19);
    const now = (await ok(s, "get_expense", { expense_id: expense.expense_id }, owner.key)).expense;
    expect(now.version).toBe(expense.version + 1);
    expect(now.description.untrusted_content).toBe(winners[0]!.body.data.expense.description.untrusted_content);
  });

  test("concurrent accepts of one invitation join once; the other answers are CONFLICT", async () => {
    const joiner = await register(s, "race-joiner");
    await befriend(s, owner, joiner);
    const { invite } = await ok(s, "create_group_invite", { group_id: groupId, handle: joiner.handle, idempotency_key: crypto.randomUUID() }, owner.key);
    const answers = await at(20, () =>
      s.call("respond_group_invite", { invite_id: invite.invite_id, action: "accept", idempotency_key: crypto.randomUUID() }, joiner.key),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.body.error?.code === "CONFLICT")).toHaveLength(19);
    const members = (await ok(s, "get_group", { group_id: groupId }, owner.key)).group.members.map((m: any) => m.agent.handle);
    expect(members.filter((h: string) => h === joiner.handle)).toHaveLength(1);
  });

  test("an invite code for 3 used by 10 agents at once admits exactly 3; one agent racing itself joins once", async () => {
    const { invite } = await ok(s, "create_group_invite", { group_id: groupId, max_uses: 3, idempotency_key: crypto.randomUUID() }, owner.key);
    const racers = await at(10, (i) => register(s, `race-coder-${i}`));
    const answers = await at(10, (i) => s.call("join_group", { invite_code: invite.code, idempotency_key: crypto.randomUUID() }, racers[i]!.key));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    expect(answers.filter((a) => a.body.error?.code === "CONFLICT")).toHaveLength(7);
    const { invite: roomy } = await ok(s, "create_group_invite", { group_id: groupId, max_uses: 50, idempotency_key: crypto.randomUUID() }, owner.key);
    const solo = await register(s, "race-solo");
    const self = await at(10, () => s.call("join_group", { invite_code: roomy.code, idempotency_key: crypto.randomUUID() }, solo.key));
    expect(self.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(self.filter((a) => a.body.data.joined)).toHaveLength(1);
    const group = (await ok(s, "get_group", { group_id: groupId }, owner.key)).group;
    expect(group.members.filter((m: any) => m.agent.handle === solo.handle)).toHaveLength(1);
  });
});
