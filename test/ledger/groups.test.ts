import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { groupInvites, ledgerActivity } from "../../db/schema/index.ts";
import { DAY } from "../../server/clock.ts";
import { findTool } from "../../server/tools/catalogue.ts";
import { key, startTestServer, type Agent, type TestServer } from "../harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

type Any = any;

/** A call expected to fail with `status` and `code`; returns the error. */
async function fails(tool: string, args: Record<string, unknown>, apiKey: string, status: number, code: string) {
  const r = await s.call(tool, findTool(tool)!.idempotent ? { idempotency_key: key(), ...args } : args, apiKey);
  expect({ tool, status: r.status, code: r.body.error?.code }).toEqual({ tool, status, code });
  return r.body.error;
}

const items = async (apiKey: string, type: string): Promise<Any[]> =>
  (await s.ok("get_inbox", { since: "0", include_seen: true }, apiKey)).items.filter((i: Any) => i.type === type);

const activity = async (groupId: string) =>
  (await s.server.db.read((tx) => tx.select().from(ledgerActivity).where(eq(ledgerActivity.groupId, groupId)))).map((a) => a.action);

/** An expense `payer` paid entirely for `debtor`, through add_expense. */
async function book(groupId: string, payer: Agent, debtor: Agent, minor: number) {
  await s.ok(
    "add_expense",
    { group_id: groupId, description: "test booking", amount_minor: minor, split: { mode: "shares", among: [{ handle: debtor.handle, value: 1 }] } },
    payer.key,
  );
}

/** A confirmed payment: `from` paid `to`, recorded by the payee. */
async function pay(groupId: string, from: Agent, to: Agent, minor: number) {
  await s.ok("record_payment", { group_id: groupId, from: from.handle, to: to.handle, amount_minor: minor }, to.key);
}

/** A group owned by `owner` with `others` as members (invited and accepted). */
async function groupWith(owner: Agent, others: Agent[], name = "Trip", currency = "EUR") {
  const { group, invites } = await s.ok("create_group", { name, currency, members: others.map((o) => o.handle) }, owner.key);
  for (const [i, o] of others.entries()) await s.ok("respond_group_invite", { invite_id: invites[i].invite_id, action: "accept" }, o.key);
  return group.group_id as string;
}

/** Registers agents and makes the first an accepted contact of each of the others. */
async function circle(...handles: string[]): Promise<Agent[]> {
  const [first, ...rest] = await Promise.all(handles.map((h) => s.register(h)));
  for (const r of rest) {
    await s.ok("add_contact", { handle: r.handle }, first!.key);
    await s.ok("respond_contact_request", { handle: first!.handle, action: "accept" }, r.key);
  }
  return [first!, ...rest];
}

const ghost = "00000000-0000-4000-8000-000000000000";

describe("create_group", () => {
  test("creates a group with the caller as owner and zero balance, logged", async () => {
    const [a] = await circle("cg-a");
    const r = await s.ok("create_group", { name: "Flat", currency: "EUR", description: "rent and bills" }, a!.key);
    const g = r.group;
    expect(g).toMatchObject({
      name: "Flat",
      currency: "EUR",
      kind: "group",
      archived: false,
      member_count: 1,
      my_balance_minor: 0,
      my_balance: "0.00 EUR",
      settings: { simplify_debts: true, description: { untrusted_content: "rent and bills", source: "group description, written by the group's members" } },
      created_by: { handle: "cg-a" },
    });
    expect(g.members).toEqual([
      {
        agent: { agent_id: a!.agent_id, handle: "cg-a", display_name: "CG-A" },
        member_id: a!.agent_id,
        name: "CG-A",
        role: "owner",
        joined_at: g.created_at,
        balance_minor: 0,
        balance: "0.00 EUR",
      },
    ]);
    expect(r.invites).toEqual([]);
    expect(await activity(g.group_id)).toEqual(["group_created"]);
    const jpy = await s.ok("create_group", { name: "Tokyo", currency: "JPY" }, a!.key);
    expect(jpy.group.my_balance).toBe("0 JPY");
  });

  test("validation: name length, currency code, unknown fields, member handles", async () => {
    const [a] = await circle("cg-v");
    const issue = async (args: Record<string, unknown>) =>
      (await fails("create_group", args, a!.key, 400, "VALIDATION_ERROR")).details.issues.map((i: Any) => i.path);
    expect(await issue({ name: "", currency: "EUR" })).toEqual(["name"]);
    expect(await issue({ name: "x".repeat(81), currency: "EUR" })).toEqual(["name"]);
    expect(await issue({ name: "a\u0007b", currency: "EUR" })).toEqual(["name"]);
    expect(await issue({ name: "Trip", currency: "eur" })).toEqual(["currency"]);
    expect(await issue({ name: "Trip", currency: "XYZ" })).toEqual(["currency"]);
    expect(await issue({ name: "Trip" })).toEqual(["currency"]);
    expect(await issue({ name: "Trip", currency: "EUR", description: "d".repeat(501) })).toEqual(["description"]);
    expect(await issue({ name: "Trip", currency: "EUR", members: ["Not A Handle"] })).toEqual(["members[0]"]);
    expect(await issue({ name: "Trip", currency: "EUR", colour: "red" })).toEqual(["(arguments)"]);
    expect((await s.ok("list_groups", {}, a!.key)).groups).toEqual([]);
  });

  test("members each get a group.invitation (not a silent add); accepting joins", async () => {
    const [a, b, c] = await circle("cg-m-a", "cg-m-b", "cg-m-c");
    const r = await s.ok("create_group", { name: "Ski", currency: "CHF", members: ["cg-m-b", "cg-m-c", "cg-m-b"] }, a!.key);
    expect(r.group.member_count).toBe(1);
    expect(r.invites.map((i: Any) => [i.kind, i.invitee.handle, i.state, i.invited_by.handle, i.code])).toEqual([
      ["targeted", "cg-m-b", "pending", "cg-m-a", null],
      ["targeted", "cg-m-c", "pending", "cg-m-a", null],
    ]);
    const [item] = await items(b!.key, "group.invitation");
    expect(item).toMatchObject({
      app: "ledger",
      from: { handle: "cg-m-a" },
      requires_action: true,
      resolved: false,
      suggested_tools: ["respond_group_invite"],
      refs: { group_id: r.group.group_id, invite_id: r.invites[0].invite_id },
      payload: {
        group_id: r.group.group_id,
        group_name: { untrusted_content: "Ski", source: expect.any(String) },
        currency: "CHF",
        inviter: "cg-m-a",
        invite_id: r.invites[0].invite_id,
      },
    });
    expect(item.summary_md).toContain("“Ski” (quoted)");
    expect((await s.ok("get_me", {}, b!.key)).pending_invites_count).toBe(1);
    expect((await items(c!.key, "group.invitation")).length).toBe(1);
    await fails("get_group", { group_id: r.group.group_id }, b!.key, 404, "NOT_FOUND");
  });

  test("members must be accepted contacts: strangers are a CONFLICT, unknown handles NOT_FOUND, nothing is created", async () => {
    const [a] = await circle("cg-s-a", "cg-s-b");
    await s.register("cg-s-stranger");
    const e = await fails("create_group", { name: "X", currency: "EUR", members: ["cg-s-b", "cg-s-stranger"] }, a!.key, 409, "CONFLICT");
    expect(e.message).toContain("@cg-s-stranger");
    await fails("create_group", { name: "X", currency: "EUR", members: ["cg-s-nobody"] }, a!.key, 404, "NOT_FOUND");
    await fails("create_group", { name: "X", currency: "EUR", members: ["cg-s-a"] }, a!.key, 409, "CONFLICT");
    expect((await s.ok("list_groups", {}, a!.key)).groups).toEqual([]);
    const b = await items((await s.register("cg-s-check")).key, "group.invitation");
    expect(b).toEqual([]);
  });
});

describe("list_groups", () => {
  test("the caller's groups as summaries, archived only on request, paged", async () => {
    const [a, b] = await circle("lg-a", "lg-b");
    const g1 = await groupWith(a!, [b!], "One");
    const { group: g2 } = await s.ok("create_group", { name: "Two", currency: "USD" }, a!.key);
    s.clock.advance(1000);
    const { group: g3 } = await s.ok("create_group", { name: "Three", currency: "EUR" }, a!.key);
    await s.ok("archive_group", { group_id: g2.group_id, archived: true }, a!.key);
    await book(g1, a!, b!, 1250);

    const all = (await s.ok("list_groups", { include_archived: true }, a!.key)).groups;
    expect(all.map((g: Any) => g.name).sort()).toEqual(["One", "Three", "Two"]);
    const visible = await s.ok("list_groups", {}, a!.key);
    expect(visible.groups.map((g: Any) => g.name).sort()).toEqual(["One", "Three"]);
    expect(visible.next_cursor).toBeNull();
    expect(visible.groups.find((g: Any) => g.name === "One")).toEqual({
      group_id: g1,
      name: "One",
      currency: "EUR",
      kind: "group",
      archived: false,
      member_count: 2,
      my_balance_minor: 1250,
      my_balance: "+12.50 EUR",
    });
    expect((await s.ok("list_groups", {}, b!.key)).groups.map((g: Any) => g.my_balance)).toEqual(["-12.50 EUR"]);

    const p1 = await s.ok("list_groups", { include_archived: true, limit: 2 }, a!.key);
    expect(p1.groups).toHaveLength(2);
    const p2 = await s.ok("list_groups", { include_archived: true, limit: 2, cursor: p1.next_cursor }, a!.key);
    expect(p2.groups.map((g: Any) => g.group_id)).toEqual([g3.group_id]);
    expect(p2.next_cursor).toBeNull();
    expect([...p1.groups, ...p2.groups].map((g: Any) => g.group_id)).toEqual(all.map((g: Any) => g.group_id));

    expect((await s.call("list_groups", { cursor: "!!not-a-cursor!!" }, a!.key)).status).toBe(400);
    expect((await s.call("list_groups", { limit: 0 }, a!.key)).status).toBe(400);
    expect((await s.call("list_groups", { limit: 101 }, a!.key)).status).toBe(400);
  });
});

describe("get_group", () => {
  test("members with role, joined_at and balances summing to zero; settings", async () => {
    const [a, b, c] = await circle("gg-a", "gg-b", "gg-c");
    const gid = await groupWith(a!, [b!, c!]);
    await book(gid, a!, b!, 1000);
    await book(gid, c!, b!, 250);
    await pay(gid, b!, a!, 400);
    const { group } = await s.ok("get_group", { group_id: gid }, b!.key);
    expect(group.member_count).toBe(3);
    expect(group.my_balance).toBe("-8.50 EUR");
    expect(group.settings).toEqual({ simplify_debts: true, description: null });
    const byHandle = Object.fromEntries(group.members.map((m: Any) => [m.agent.handle, [m.role, m.balance_minor, m.balance]]));
    expect(byHandle).toEqual({
      "gg-a": ["owner", 600, "+6.00 EUR"],
      "gg-b": ["member", -850, "-8.50 EUR"],
      "gg-c": ["member", 250, "+2.50 EUR"],
    });
    expect(group.members.every((m: Any) => typeof m.joined_at === "string")).toBe(true);
  });

  test("non-members and unknown groups are NOT_FOUND; bad ids are VALIDATION_ERROR", async () => {
    const [a] = await circle("gg-n-a");
    const outsider = await s.register("gg-n-out");
    const { group } = await s.ok("create_group", { name: "Secret", currency: "EUR" }, a!.key);
    const nf = await fails("get_group", { group_id: group.group_id }, outsider.key, 404, "NOT_FOUND");
    const unknown = await fails("get_group", { group_id: ghost }, outsider.key, 404, "NOT_FOUND");
    expect(nf.message).toBe(unknown.message);
    await fails("get_group", { group_id: "nope" }, a!.key, 400, "VALIDATION_ERROR");
    await fails("get_group", {}, a!.key, 400, "VALIDATION_ERROR");
  });
});

describe("update_group", () => {
  test("any member changes name, description, simplify_debts; logged", async () => {
    const [a, b] = await circle("ug-a", "ug-b");
    const gid = await groupWith(a!, [b!]);
    const { group } = await s.ok("update_group", { group_id: gid, name: "Trip 2", description: "summer", simplify_debts: false }, b!.key);
    expect(group.name).toBe("Trip 2");
    expect(group.settings).toEqual({
      simplify_debts: false,
      description: { untrusted_content: "summer", source: "group description, written by the group's members" },
    });
    const cleared = await s.ok("update_group", { group_id: gid, description: "" }, a!.key);
    expect(cleared.group.settings.description).toBeNull();
    expect((await activity(gid)).filter((x) => x === "group_updated")).toHaveLength(2);
  });

  test("validation: nothing to change, bad name, bad currency", async () => {
    const [a] = await circle("ug-v");
    const { group } = await s.ok("create_group", { name: "V", currency: "EUR" }, a!.key);
    await fails("update_group", { group_id: group.group_id }, a!.key, 400, "VALIDATION_ERROR");
    await fails("update_group", { group_id: group.group_id, name: "" }, a!.key, 400, "VALIDATION_ERROR");
    await fails("update_group", { group_id: group.group_id, currency: "euro" }, a!.key, 400, "VALIDATION_ERROR");
    await fails("update_group", { group_id: group.group_id, simplify_debts: "yes" }, a!.key, 400, "VALIDATION_ERROR");
  });

  test("the currency changes while nothing is booked, then is fixed (CONFLICT)", async () => {
    const [a, b] = await circle("ug-c-a", "ug-c-b");
    const gid = await groupWith(a!, [b!]);
    expect((await s.ok("update_group", { group_id: gid, currency: "GBP" }, a!.key)).group.currency).toBe("GBP");
    await book(gid, a!, b!, 500);
    const e = await fails("update_group", { group_id: gid, currency: "USD" }, a!.key, 409, "CONFLICT");
    expect(e.message).toContain("GBP");
    // the same currency again is no change, so no conflict
    expect((await s.ok("update_group", { group_id: gid, currency: "GBP", name: "Still GBP" }, a!.key)).group.currency).toBe("GBP");
    // a payment alone fixes it too
    const [c, d] = await circle("ug-p-c", "ug-p-d");
    const pid = await groupWith(c!, [d!]);
    await pay(pid, c!, d!, 100);
    await fails("update_group", { group_id: pid, currency: "USD" }, c!.key, 409, "CONFLICT");
  });

  test("archived groups are read-only; non-members are NOT_FOUND", async () => {
    const [a] = await circle("ug-r");
    const outsider = await s.register("ug-r-out");
    const { group } = await s.ok("create_group", { name: "R", currency: "EUR" }, a!.key);
    await fails("update_group", { group_id: group.group_id, name: "Mine" }, outsider.key, 404, "NOT_FOUND");
    await s.ok("archive_group", { group_id: group.group_id, archived: true }, a!.key);
    await fails("update_group", { group_id: group.group_id, name: "R2" }, a!.key, 409, "CONFLICT");
  });
});

describe("archive_group", () => {
  test("archived: readable, hidden from list_groups by default, read-only; unarchive restores", async () => {
    const [a, b, c] = await circle("ag-a", "ag-b", "ag-c");
    const gid = await groupWith(a!, [b!]);
    const { invite } = await s.ok("create_group_invite", { group_id: gid }, a!.key);
    const { invite: targeted } = await s.ok("create_group_invite", { group_id: gid, handle: "ag-c" }, a!.key);
    const r = await s.ok("archive_group", { group_id: gid, archived: true }, b!.key);
    expect(r.group.archived).toBe(true);
    expect((await s.ok("get_group", { group_id: gid }, a!.key)).group.archived).toBe(true);
    expect((await s.ok("list_groups", {}, a!.key)).groups).toEqual([]);
    await fails("create_group_invite", { group_id: gid }, a!.key, 409, "CONFLICT");
    await fails("join_group", { invite_code: invite.code }, c!.key, 409, "CONFLICT");
    await fails("respond_group_invite", { invite_id: targeted.invite_id, action: "accept" }, c!.key, 409, "CONFLICT");
    await fails("leave_group", { group_id: gid }, b!.key, 409, "CONFLICT");
    await fails("remove_group_member", { group_id: gid, handle: "ag-b" }, a!.key, 409, "CONFLICT");
    // archiving twice changes nothing
    await s.ok("archive_group", { group_id: gid, archived: true }, a!.key);
    expect((await activity(gid)).filter((x) => x === "group_archived")).toHaveLength(1);
    expect((await s.ok("archive_group", { group_id: gid, archived: false }, a!.key)).group.archived).toBe(false);
    expect((await s.ok("join_group", { invite_code: invite.code }, c!.key)).joined).toBe(true);
    expect(await activity(gid)).toContain("group_unarchived");
  });

  test("validation and non-members", async () => {
    const [a] = await circle("ag-v");
    const outsider = await s.register("ag-v-out");
    const { group } = await s.ok("create_group", { name: "V", currency: "EUR" }, a!.key);
    await fails("archive_group", { group_id: group.group_id }, a!.key, 400, "VALIDATION_ERROR");
    await fails("archive_group", { group_id: group.group_id, archived: true }, outsider.key, 404, "NOT_FOUND");
  });
});

describe("create_group_invite", () => {
  test("targeted to an accepted contact; asking again returns the same invitation, one inbox item", async () => {
    const [a, b] = await circle("ci-a", "ci-b");
    const { group } = await s.ok("create_group", { name: "T", currency: "EUR" }, a!.key);
    const r = await s.ok("create_group_invite", { group_id: group.group_id, handle: "ci-b" }, a!.key);
    expect(r.invite).toMatchObject({
      kind: "targeted",
      group_id: group.group_id,
      invitee: { handle: "ci-b" },
      state: "pending",
      code: null,
      max_uses: 1,
      uses: 0,
    });
    expect(Date.parse(r.invite.expires_at) - s.clock.now().getTime()).toBe(30 * DAY);
    const again = await s.ok("create_group_invite", { group_id: group.group_id, handle: "ci-b" }, a!.key);
    expect(again.invite.invite_id).toBe(r.invite.invite_id);
    expect(await items(b!.key, "group.invitation")).toHaveLength(1);
    expect(await activity(group.group_id)).toContain("invite_created");
  });

  test("targeted to a fellow member of another group who is not a contact", async () => {
    const [a, b, c] = await circle("ci-f-a", "ci-f-b", "ci-f-c");
    const shared = await groupWith(a!, [b!, c!]);
    const { group: own } = await s.ok("create_group", { name: "B's", currency: "EUR" }, b!.key);
    const r = await s.ok("create_group_invite", { group_id: own.group_id, handle: "ci-f-c" }, b!.key);
    expect(r.invite.invitee.handle).toBe("ci-f-c");
    expect((await items(c!.key, "group.invitation")).map((i: Any) => i.refs.invite_id)).toContain(r.invite.invite_id);
    // once c leaves the shared group, b can no longer reach them
    await s.ok("leave_group", { group_id: shared }, c!.key);
    const { group: another } = await s.ok("create_group", { name: "Other", currency: "EUR" }, b!.key);
    await fails("create_group_invite", { group_id: another.group_id, handle: "ci-f-c" }, b!.key, 409, "CONFLICT");
  });

  test("conflicts: strangers, members, yourself, direct ledgers; unknown handle NOT_FOUND; non-member NOT_FOUND", async () => {
    const [a, b] = await circle("ci-c-a", "ci-c-b");
    await s.register("ci-c-stranger");
    const gid = await groupWith(a!, [b!]);
    const stranger = await fails("create_group_invite", { group_id: gid, handle: "ci-c-stranger" }, a!.key, 409, "CONFLICT");
    expect(stranger.message).toContain("add_contact");
    expect((await fails("create_group_invite", { group_id: gid, handle: "ci-c-b" }, a!.key, 409, "CONFLICT")).message).toContain("already a member");
    await fails("create_group_invite", { group_id: gid, handle: "ci-c-a" }, a!.key, 409, "CONFLICT");
    await fails("create_group_invite", { group_id: gid, handle: "ci-c-nobody" }, a!.key, 404, "NOT_FOUND");
    const outsider = await s.register("ci-c-out");
    await fails("create_group_invite", { group_id: gid }, outsider.key, 404, "NOT_FOUND");
    const { group: direct } = await s.ok("open_direct_ledger", { handle: "ci-c-b", currency: "EUR" }, a!.key);
    await fails("create_group_invite", { group_id: direct.group_id }, a!.key, 409, "CONFLICT");
  });

  test("validation: code options only without handle; expires_at in the future, at most a year; max_uses 1-1000", async () => {
    const [a] = await circle("ci-v");
    const { group } = await s.ok("create_group", { name: "V", currency: "EUR" }, a!.key);
    const gid = group.group_id;
    const paths = async (args: Record<string, unknown>) =>
      (await fails("create_group_invite", { group_id: gid, ...args }, a!.key, 400, "VALIDATION_ERROR")).details.issues.map((i: Any) => i.path);
    expect(await paths({ handle: "ci-x", max_uses: 3 })).toEqual(["max_uses"]);
    expect(await paths({ handle: "ci-x", expires_at: "2030-01-01T00:00:00Z" })).toEqual(["expires_at"]);
    expect(await paths({ max_uses: 0 })).toEqual(["max_uses"]);
    expect(await paths({ max_uses: 1001 })).toEqual(["max_uses"]);
    expect(await paths({ expires_at: "tomorrow" })).toEqual(["expires_at"]);
    expect(await paths({ expires_at: new Date(s.clock.now().getTime() - 1000).toISOString() })).toEqual(["expires_at"]);
    expect(await paths({ expires_at: new Date(s.clock.now().getTime() + 366 * DAY).toISOString() })).toEqual(["expires_at"]);
    expect(await paths({ handle: "Bad Handle" })).toEqual(["handle"]);
  });

  test("shareable code: 8-64 chars, defaults, chosen expiry and uses, message to forward", async () => {
    const [a] = await circle("ci-code");
    const { group } = await s.ok("create_group", { name: "C", currency: "EUR" }, a!.key);
    const r = await s.ok("create_group_invite", { group_id: group.group_id }, a!.key);
    expect(r.invite).toMatchObject({ kind: "code", invitee: null, state: "pending", max_uses: 10, uses: 0 });
    expect(r.invite.code.length).toBeGreaterThanOrEqual(8);
    expect(r.invite.code.length).toBeLessThanOrEqual(64);
    expect(Date.parse(r.invite.expires_at) - s.clock.now().getTime()).toBe(7 * DAY);
    expect(r.message).toContain(r.invite.code);
    const until = new Date(s.clock.now().getTime() + 2 * DAY).toISOString();
    const chosen = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 1, expires_at: until }, a!.key);
    expect(chosen.invite).toMatchObject({ max_uses: 1, expires_at: until });
    expect(chosen.invite.code).not.toBe(r.invite.code);
  });

  test("an invitee who blocked the inviter hears nothing; the inviter is answered as usual; the invitation is unusable", async () => {
    const [a, b] = await circle("ci-b-a", "ci-b-b");
    await s.ok("block_contact", { handle: "ci-b-a" }, b!.key);
    const { group } = await s.ok("create_group", { name: "Sneaky", currency: "EUR" }, a!.key);
    const r = await s.ok("create_group_invite", { group_id: group.group_id, handle: "ci-b-b" }, a!.key);
    expect(r.invite.state).toBe("pending");
    expect(r.invite.invitee.handle).toBe("ci-b-b");
    expect(await items(b!.key, "group.invitation")).toEqual([]);
    expect((await s.ok("get_me", {}, b!.key)).pending_invites_count).toBe(0);
    // asking again looks the same as for anyone else: the same invitation back
    expect((await s.ok("create_group_invite", { group_id: group.group_id, handle: "ci-b-b" }, a!.key)).invite.invite_id).toBe(r.invite.invite_id);
    await fails("respond_group_invite", { invite_id: r.invite.invite_id, action: "accept" }, b!.key, 404, "NOT_FOUND");
    // create_group's members go the same way
    const viaCreate = await s.ok("create_group", { name: "Sneaky 2", currency: "EUR", members: ["ci-b-b"] }, a!.key);
    expect(viaCreate.invites[0].state).toBe("pending");
    expect(await items(b!.key, "group.invitation")).toEqual([]);
    await fails("respond_group_invite", { invite_id: viaCreate.invites[0].invite_id, action: "accept" }, b!.key, 404, "NOT_FOUND");
    const stored = await s.server.db.read((tx) => tx.select().from(groupInvites).where(eq(groupInvites.inviteId, r.invite.invite_id)).get());
    expect(stored!.state).toBe("revoked");
    // once b unblocks a (add_contact, accepted by a), a new invitation reaches b
    await s.ok("add_contact", { handle: "ci-b-a" }, b!.key);
    await s.ok("respond_contact_request", { handle: "ci-b-b", action: "accept" }, a!.key);
    const fresh = await s.ok("create_group_invite", { group_id: group.group_id, handle: "ci-b-b" }, a!.key);
    expect(fresh.invite.invite_id).not.toBe(r.invite.invite_id);
    expect((await items(b!.key, "group.invitation")).map((i: Any) => i.refs.invite_id)).toEqual([fresh.invite.invite_id]);
    expect((await s.ok("respond_group_invite", { invite_id: fresh.invite.invite_id, action: "accept" }, b!.key)).group.member_count).toBe(2);
  });
});

describe("respond_group_invite", () => {
  test("accept joins, resolves the item, tells the other members, logs", async () => {
    const [a, b, c] = await circle("ri-a", "ri-b", "ri-c");
    const gid = await groupWith(a!, [b!]);
    const { invite } = await s.ok("create_group_invite", { group_id: gid, handle: "ri-c" }, a!.key);
    expect((await s.ok("get_me", {}, c!.key)).pending_invites_count).toBe(1);
    const r = await s.ok("respond_group_invite", { invite_id: invite.invite_id, action: "accept" }, c!.key);
    expect(r.invite.state).toBe("accepted");
    expect(r.invite.responded_at).not.toBeNull();
    expect(r.group.member_count).toBe(3);
    expect(r.group.members.map((m: Any) => m.agent.handle)).toContain("ri-c");
    expect((await items(c!.key, "group.invitation"))[0].resolved).toBe(true);
    expect((await s.ok("get_me", {}, c!.key)).pending_invites_count).toBe(0);
    for (const other of [a!, b!]) {
      const joined = (await items(other.key, "group.member_joined")).filter((i: Any) => i.refs.agent_id === c!.agent_id);
      expect(joined).toHaveLength(1);
      expect(joined[0]).toMatchObject({ app: "ledger", from: { handle: "ri-c" }, refs: { group_id: gid }, requires_action: false });
      expect(joined[0].payload.group_name.untrusted_content).toBe("Trip");
      expect(joined[0].summary_md).toBe("@ri-c joined the group “Trip” (quoted).");
    }
    expect(await items(c!.key, "group.member_joined")).toEqual([]);
    expect(await activity(gid)).toContain("member_joined");
    await fails("respond_group_invite", { invite_id: invite.invite_id, action: "decline" }, c!.key, 409, "CONFLICT");
  });

  test("decline resolves the item and joins nothing", async () => {
    const [a, b] = await circle("ri-d-a", "ri-d-b");
    const { group, invites } = await s.ok("create_group", { name: "D", currency: "EUR", members: ["ri-d-b"] }, a!.key);
    const r = await s.ok("respond_group_invite", { invite_id: invites[0].invite_id, action: "decline" }, b!.key);
    expect(r.invite.state).toBe("declined");
    expect(r.group).toBeNull();
    expect((await items(b!.key, "group.invitation"))[0].resolved).toBe(true);
    await fails("get_group", { group_id: group.group_id }, b!.key, 404, "NOT_FOUND");
    expect(await activity(group.group_id)).toContain("invite_declined");
    await fails("respond_group_invite", { invite_id: invites[0].invite_id, action: "accept" }, b!.key, 409, "CONFLICT");
    // a fresh invitation can follow a declined one
    const again = await s.ok("create_group_invite", { group_id: group.group_id, handle: "ri-d-b" }, a!.key);
    expect(again.invite.invite_id).not.toBe(invites[0].invite_id);
  });

  test("someone else's invitation and unknown ids are NOT_FOUND; validation", async () => {
    const [a, b] = await circle("ri-n-a", "ri-n-b");
    const { invites } = await s.ok("create_group", { name: "N", currency: "EUR", members: ["ri-n-b"] }, a!.key);
    await fails("respond_group_invite", { invite_id: invites[0].invite_id, action: "accept" }, a!.key, 404, "NOT_FOUND");
    await fails("respond_group_invite", { invite_id: ghost, action: "accept" }, b!.key, 404, "NOT_FOUND");
    await fails("respond_group_invite", { invite_id: invites[0].invite_id, action: "maybe" }, b!.key, 400, "VALIDATION_ERROR");
    await fails("respond_group_invite", { action: "accept" }, b!.key, 400, "VALIDATION_ERROR");
  });

  test("an expired invitation is a CONFLICT", async () => {
    const [a, b] = await circle("ri-e-a", "ri-e-b");
    const { invites } = await s.ok("create_group", { name: "E", currency: "EUR", members: ["ri-e-b"] }, a!.key);
    s.clock.advance(30 * DAY + 1);
    expect((await fails("respond_group_invite", { invite_id: invites[0].invite_id, action: "accept" }, b!.key, 409, "CONFLICT")).message).toContain("expired");
  });

  test("concurrent accepts of the same invitation join once", async () => {
    const [a, b, c] = await circle("ri-x-a", "ri-x-b", "ri-x-c");
    const gid = await groupWith(a!, [b!]);
    const { invite } = await s.ok("create_group_invite", { group_id: gid, handle: "ri-x-c" }, a!.key);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => s.call("respond_group_invite", { invite_id: invite.invite_id, action: "accept", idempotency_key: key() }, c!.key)),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const { group } = await s.ok("get_group", { group_id: gid }, c!.key);
    expect(group.members.filter((m: Any) => m.agent.handle === "ri-x-c")).toHaveLength(1);
    expect((await items(a!.key, "group.member_joined")).filter((i: Any) => i.refs.agent_id === c!.agent_id)).toHaveLength(1);
    expect((await activity(gid)).filter((x) => x === "member_joined")).toHaveLength(2);
  });

  test("joining by code also settles an open invitation to the same group", async () => {
    const [a, b] = await circle("ri-j-a", "ri-j-b");
    const { group, invites } = await s.ok("create_group", { name: "J", currency: "EUR", members: ["ri-j-b"] }, a!.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id }, a!.key);
    await s.ok("join_group", { invite_code: invite.code }, b!.key);
    expect((await items(b!.key, "group.invitation"))[0].resolved).toBe(true);
    expect((await s.ok("get_me", {}, b!.key)).pending_invites_count).toBe(0);
    await fails("respond_group_invite", { invite_id: invites[0].invite_id, action: "accept" }, b!.key, 409, "CONFLICT");
  });
});

describe("join_group", () => {
  test("joins with a code (any case), tells the members, counts a use; a member joining again spends nothing", async () => {
    const [a, b] = await circle("jg-a", "jg-b");
    const gid = await groupWith(a!, [b!]);
    const { invite } = await s.ok("create_group_invite", { group_id: gid, max_uses: 2 }, a!.key);
    const c = await s.register("jg-c");
    const r = await s.ok("join_group", { invite_code: `  ${invite.code.toUpperCase()} ` }, c.key);
    expect(r.joined).toBe(true);
    expect(r.group).toMatchObject({ group_id: gid, member_count: 3, my_balance: "0.00 EUR" });
    expect(r.group.members.find((m: Any) => m.agent.handle === "jg-c").role).toBe("member");
    for (const other of [a!, b!]) {
      const [item] = (await items(other.key, "group.member_joined")).filter((i: Any) => i.refs.agent_id === c.agent_id);
      expect(item.payload.via).toBe("code");
    }
    const again = await s.ok("join_group", { invite_code: invite.code }, c.key);
    expect(again.joined).toBe(false);
    const stored = await s.server.db.read((tx) => tx.select().from(groupInvites).where(eq(groupInvites.inviteId, invite.invite_id)).get());
    expect(stored!.uses).toBe(1);
  });

  test("max_uses is exact, also under concurrent joins", async () => {
    const [a] = await circle("jg-m-a");
    const { group } = await s.ok("create_group", { name: "M", currency: "EUR" }, a!.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 2 }, a!.key);
    const joiners = await Promise.all(["jg-m-1", "jg-m-2", "jg-m-3", "jg-m-4"].map((h) => s.register(h)));
    const results = await Promise.all(joiners.map((j) => s.call("join_group", { invite_code: invite.code, idempotency_key: key() }, j.key)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 409, 409]);
    expect(results.find((r) => r.status === 409)!.body.error.message).toContain("maximum");
    expect((await s.ok("get_group", { group_id: group.group_id }, a!.key)).group.member_count).toBe(3);
  });

  test("expired codes are a CONFLICT; unknown codes NOT_FOUND; validation", async () => {
    const [a] = await circle("jg-e-a");
    const b = await s.register("jg-e-b");
    const { group } = await s.ok("create_group", { name: "E", currency: "EUR" }, a!.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id }, a!.key);
    s.clock.advance(7 * DAY);
    expect((await fails("join_group", { invite_code: invite.code }, b.key, 409, "CONFLICT")).message).toContain("expired");
    await fails("join_group", { invite_code: "nosuchcode123" }, b.key, 404, "NOT_FOUND");
    await fails("join_group", { invite_code: "short" }, b.key, 400, "VALIDATION_ERROR");
    await fails("join_group", { invite_code: "x".repeat(65) }, b.key, 400, "VALIDATION_ERROR");
    await fails("join_group", {}, b.key, 400, "VALIDATION_ERROR");
  });

  test("a former member rejoins", async () => {
    const [a, b] = await circle("jg-r-a", "jg-r-b");
    const gid = await groupWith(a!, [b!]);
    await s.ok("leave_group", { group_id: gid }, b!.key);
    const { invite } = await s.ok("create_group_invite", { group_id: gid }, a!.key);
    const r = await s.ok("join_group", { invite_code: invite.code }, b!.key);
    expect(r.joined).toBe(true);
    expect(r.group.member_count).toBe(2);
  });
});

describe("leave_group", () => {
  test("with a zero balance: left, no longer visible, logged", async () => {
    const [a, b] = await circle("lv-a", "lv-b");
    const gid = await groupWith(a!, [b!]);
    await book(gid, a!, b!, 700);
    await pay(gid, b!, a!, 700);
    const r = await s.ok("leave_group", { group_id: gid }, b!.key);
    expect(r).toMatchObject({ left: true, group_id: gid });
    await fails("get_group", { group_id: gid }, b!.key, 404, "NOT_FOUND");
    expect((await s.ok("get_group", { group_id: gid }, a!.key)).group.member_count).toBe(1);
    expect(await activity(gid)).toContain("member_left");
    await fails("leave_group", { group_id: gid }, b!.key, 404, "NOT_FOUND");
  });

  test("a non-zero balance is a CONFLICT naming it, for creditor and debtor", async () => {
    const [a, b] = await circle("lv-n-a", "lv-n-b");
    const gid = await groupWith(a!, [b!]);
    await book(gid, a!, b!, 1250);
    const debtor = await fails("leave_group", { group_id: gid }, b!.key, 409, "CONFLICT");
    expect(debtor.message).toContain("-12.50 EUR");
    expect(debtor.details).toEqual({ balance_minor: -1250, balance: "-12.50 EUR" });
    expect((await fails("leave_group", { group_id: gid }, a!.key, 409, "CONFLICT")).message).toContain("+12.50 EUR");
  });

  test("an owner who leaves hands ownership to the longest-standing member", async () => {
    const [a, b, c] = await circle("lv-o-a", "lv-o-b", "lv-o-c");
    const gid = await groupWith(a!, [b!, c!]);
    await s.ok("leave_group", { group_id: gid }, a!.key);
    const { group } = await s.ok("get_group", { group_id: gid }, b!.key);
    expect(group.members.map((m: Any) => [m.agent.handle, m.role])).toEqual([
      ["lv-o-b", "owner"],
      ["lv-o-c", "member"],
    ]);
    expect((await s.ok("remove_group_member", { group_id: gid, handle: "lv-o-c" }, b!.key)).group.member_count).toBe(1);
  });

  test("direct ledgers cannot be left; validation", async () => {
    const [a] = await circle("lv-d-a", "lv-d-b");
    const { group } = await s.ok("open_direct_ledger", { handle: "lv-d-b", currency: "EUR" }, a!.key);
    await fails("leave_group", { group_id: group.group_id }, a!.key, 409, "CONFLICT");
    await fails("leave_group", { group_id: "x" }, a!.key, 400, "VALIDATION_ERROR");
  });
});

describe("remove_group_member", () => {
  test("the owner removes a member with a zero balance; logged", async () => {
    const [a, b, c] = await circle("rm-a", "rm-b", "rm-c");
    const gid = await groupWith(a!, [b!, c!]);
    const r = await s.ok("remove_group_member", { group_id: gid, handle: "rm-b" }, a!.key);
    expect(r.group.members.map((m: Any) => m.agent.handle)).toEqual(["rm-a", "rm-c"]);
    await fails("get_group", { group_id: gid }, b!.key, 404, "NOT_FOUND");
    expect(await activity(gid)).toContain("member_removed");
  });

  test("owner only (FORBIDDEN); a non-zero balance is a CONFLICT naming it; non-members NOT_FOUND; not yourself", async () => {
    const [a, b, c] = await circle("rm-n-a", "rm-n-b", "rm-n-c");
    const gid = await groupWith(a!, [b!, c!]);
    const forbidden = await fails("remove_group_member", { group_id: gid, handle: "rm-n-c" }, b!.key, 403, "FORBIDDEN");
    expect(forbidden.suggested_action).toContain("owner");
    await book(gid, c!, b!, 300);
    const e = await fails("remove_group_member", { group_id: gid, handle: "rm-n-b" }, a!.key, 409, "CONFLICT");
    expect(e.message).toContain("@rm-n-b's balance in this group is -3.00 EUR");
    await fails("remove_group_member", { group_id: gid, handle: "rm-n-a" }, a!.key, 409, "CONFLICT");
    await s.register("rm-n-out");
    await fails("remove_group_member", { group_id: gid, handle: "rm-n-out" }, a!.key, 404, "NOT_FOUND");
    await fails("remove_group_member", { group_id: gid, handle: "rm-n-nobody" }, a!.key, 404, "NOT_FOUND");
    const outsider = await s.register("rm-n-out2");
    await fails("remove_group_member", { group_id: gid, handle: "rm-n-b" }, outsider.key, 404, "NOT_FOUND");
    await fails("remove_group_member", { group_id: gid }, a!.key, 400, "VALIDATION_ERROR");
  });
});

describe("open_direct_ledger", () => {
  test("creates the direct group once; both sides get the same one", async () => {
    const [a, b] = await circle("dl-a", "dl-b");
    const first = await s.ok("open_direct_ledger", { handle: "dl-b", currency: "EUR" }, a!.key);
    expect(first.created).toBe(true);
    expect(first.group).toMatchObject({ kind: "direct", currency: "EUR", member_count: 2, name: "dl-a & dl-b" });
    const again = await s.ok("open_direct_ledger", { handle: "dl-b" }, a!.key);
    expect(again.created).toBe(false);
    expect(again.group.group_id).toBe(first.group.group_id);
    const theirs = await s.ok("open_direct_ledger", { handle: "dl-a", currency: "USD" }, b!.key);
    expect(theirs).toMatchObject({ created: false, group: { group_id: first.group.group_id, currency: "EUR" } });
    expect((await s.ok("list_groups", {}, b!.key)).groups.map((g: Any) => g.kind)).toEqual(["direct"]);
    expect(await activity(first.group.group_id)).toEqual(["group_created"]);
  });

  test("only with accepted contacts (NOT_FOUND); a currency to create; validation", async () => {
    const [a] = await circle("dl-n-a", "dl-n-b");
    await s.register("dl-n-stranger");
    await fails("open_direct_ledger", { handle: "dl-n-stranger", currency: "EUR" }, a!.key, 404, "NOT_FOUND");
    await fails("open_direct_ledger", { handle: "dl-n-nobody", currency: "EUR" }, a!.key, 404, "NOT_FOUND");
    await fails("open_direct_ledger", { handle: "dl-n-a", currency: "EUR" }, a!.key, 404, "NOT_FOUND");
    const e = await fails("open_direct_ledger", { handle: "dl-n-b" }, a!.key, 400, "VALIDATION_ERROR");
    expect(e.details.issues[0].path).toBe("currency");
    await fails("open_direct_ledger", { handle: "dl-n-b", currency: "eur" }, a!.key, 400, "VALIDATION_ERROR");
  });

  test("a contact who blocked the caller is not put into a new ledger with them", async () => {
    const [a, b] = await circle("dl-b-a", "dl-b-b");
    await s.ok("block_contact", { handle: "dl-b-a" }, b!.key);
    const r = await s.ok("open_direct_ledger", { handle: "dl-b-b", currency: "EUR" }, a!.key);
    expect(r.group.members.map((m: Any) => m.agent.handle)).toEqual(["dl-b-a"]);
    expect((await s.ok("list_groups", {}, b!.key)).groups).toEqual([]);
    // once b unblocks a (add_contact, which a accepts), opening it from b's side brings b in
    await s.ok("add_contact", { handle: "dl-b-a" }, b!.key);
    await s.ok("respond_contact_request", { handle: "dl-b-b", action: "accept" }, a!.key);
    const theirs = await s.ok("open_direct_ledger", { handle: "dl-b-a" }, b!.key);
    expect(theirs.group.group_id).toBe(r.group.group_id);
    expect(theirs.group.member_count).toBe(2);
  });
});

describe("spine tools, ledger parts", () => {
  test("register_agent with invite_code registers and joins in one step", async () => {
    const [a] = await circle("sp-a");
    const { group } = await s.ok("create_group", { name: "Welcome", currency: "EUR" }, a!.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 1 }, a!.key);
    const r = await s.ok("register_agent", { handle: "sp-new", display_name: "New", invite_code: invite.code });
    expect(r.joined_group).toEqual({
      group_id: group.group_id,
      name: "Welcome",
      currency: "EUR",
      kind: "group",
      archived: false,
      member_count: 2,
      my_balance_minor: 0,
      my_balance: "0.00 EUR",
    });
    expect((await items(a!.key, "group.member_joined")).map((i: Any) => i.from.handle)).toEqual(["sp-new"]);
    // a used-up code fails the registration as a whole: the handle stays free
    const used = await s.call("register_agent", { handle: "sp-late", display_name: "Late", invite_code: invite.code });
    expect(used.status).toBe(409);
    const unknown = await s.call("register_agent", { handle: "sp-late", display_name: "Late", invite_code: "nosuchcode99" });
    expect(unknown.status).toBe(404);
    expect((await s.ok("register_agent", { handle: "sp-late", display_name: "Late" })).joined_group).toBeUndefined();
  });

  test("get_me lists groups with the caller's balance and counts pending invitations", async () => {
    const [a, b, c] = await circle("sp-me-a", "sp-me-b", "sp-me-c");
    const gid = await groupWith(a!, [b!], "Me");
    await book(gid, b!, a!, 999);
    await s.ok("create_group", { name: "Pending", currency: "USD", members: ["sp-me-c"] }, a!.key);
    await s.ok("create_group_invite", { group_id: gid, handle: "sp-me-c" }, a!.key);
    const me = await s.ok("get_me", {}, b!.key);
    expect(me.groups).toEqual([
      { group_id: gid, name: "Me", currency: "EUR", kind: "group", archived: false, member_count: 2, my_balance_minor: 999, my_balance: "+9.99 EUR" },
    ]);
    expect(me.pending_invites_count).toBe(0);
    expect((await s.ok("get_me", {}, a!.key)).groups.find((g: Any) => g.group_id === gid).my_balance).toBe("-9.99 EUR");
    expect((await s.ok("get_me", {}, c!.key)).pending_invites_count).toBe(2);
  });

  test("add_contact with handle and via_group_id: source group, only for a group both are in", async () => {
    const [a, b, c] = await circle("sp-ac-a", "sp-ac-b", "sp-ac-c");
    const gid = await groupWith(a!, [b!, c!]);
    const r = await s.ok("add_contact", { handle: "sp-ac-c", via_group_id: gid }, b!.key);
    expect(r.status).toBe("requested");
    expect(r.contact.source).toBe("group");
    expect((await s.ok("list_contacts", { state: "incoming" }, c!.key)).contacts[0].source).toBe("group");
    const outsider = await s.register("sp-ac-out");
    await fails("add_contact", { handle: "sp-ac-c", via_group_id: gid }, outsider.key, 404, "NOT_FOUND");
    await fails("add_contact", { handle: "sp-ac-out", via_group_id: gid }, b!.key, 404, "NOT_FOUND");
    await fails("add_contact", { handle: "sp-ac-c", via_group_id: ghost }, b!.key, 404, "NOT_FOUND");
    // a member who left is no longer reachable this way
    await s.ok("leave_group", { group_id: gid }, c!.key);
    await fails("add_contact", { handle: "sp-ac-a", via_group_id: gid }, c!.key, 404, "NOT_FOUND");
  });
});
