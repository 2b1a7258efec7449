// A member is a member (issue 47): a friend without an account (a placeholder) is named in every answer as any member
// is, by member_id, name and agent (null: no account, so no handle), and every argument that names a member takes
// their handle, their member_id or a placeholder's name. Over MCP with the SDK client, as an agent meets it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOOLSETS } from "../../server/tools/catalogue.ts";
import { inlineRefs } from "../../server/tools/json-schema.ts";
import { key, startTestServer, type TestServer } from "../harness.ts";
import { connectMcp, type McpClient } from "./clients.ts";

let s: TestServer;
const clients: McpClient[] = [];
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await s.stop();
});

async function connect(apiKey: string): Promise<McpClient> {
  const client = await connectMcp("2026-07-28", `${s.url}/mcp`, { authorization: `Bearer ${apiKey}` });
  clients.push(client);
  return client;
}

/** A tools/call of a write tool gets a fresh idempotency key. */
async function call(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<{ data?: any; error?: any }> {
  const withKey = name.match(/^(get|list|export)_/) ? args : { idempotency_key: key(), ...args };
  const result: any = await client.callTool({ name, arguments: withKey });
  const body = JSON.parse(result.content[0].text);
  return result.isError ? { error: body.error } : { data: body };
}

async function ok(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const { data, error } = await call(client, name, args);
  if (error) throw new Error(`${name} failed: ${JSON.stringify(error)}`);
  return data;
}

let counter = 0;
/** Alice and Bob, contacts, in a group of Alice's that Bob joined, with a placeholder named `name` added by Alice. */
async function tripWith(name = "Dana") {
  const p = `mm${++counter}`;
  const [alice, bob] = await s.contacts(`${p}-alice`, `${p}-bob`);
  const a = await connect(alice.key);
  const b = await connect(bob.key);
  const groupId = (await ok(a, "create_group", { name: "Lisbon trip", currency: "EUR", members: [bob.handle] })).group.group_id;
  const invite = (await ok(b, "get_inbox")).items.find((i: any) => i.type === "group.invitation");
  await ok(b, "respond_group_invite", { invite_id: invite.refs.invite_id, action: "accept" });
  const placeholder = (await ok(a, "create_group_invite", { group_id: groupId, name })).invite.placeholder.member_id as string;
  return { alice, bob, a, b, groupId, placeholder };
}

describe("the calls that misled an agent, again", () => {
  test("get_balances, settle-up, shares and payments name a placeholder by member_id, name and agent null", async () => {
    const { alice, a, b, groupId, placeholder } = await tripWith();
    const added = await ok(a, "add_expense", { group_id: groupId, description: "Dinner", amount: "90.00" });
    const dana = { member_id: placeholder, name: "Dana", agent: null };
    expect(added.expense.shares.find((x: any) => x.member_id === placeholder).member).toEqual(dana);
    expect(added.expense.shares.find((x: any) => x.member_id === alice.agent_id).member).toEqual({
      member_id: alice.agent_id,
      name: alice.handle.toUpperCase(),
      agent: { agent_id: alice.agent_id, handle: alice.handle, display_name: alice.handle.toUpperCase() },
    });
    const balances = await ok(b, "get_balances", { group_id: groupId });
    expect(balances.members.find((m: any) => m.member_id === placeholder)).toMatchObject({ member: dana, balance_minor: -3000 });
    const toAlice = balances.settle_up.filter((t: any) => t.to_member.member_id === alice.agent_id);
    expect(toAlice.map((t: any) => t.from_member.name).sort()).toEqual([expect.any(String), "Dana"].sort());
    expect(toAlice.find((t: any) => t.from_member.name === "Dana").from_member).toEqual(dana);
    const paid = await ok(a, "record_payment", { group_id: groupId, from: "dana", amount: "30.00" });
    expect(paid.payment).toMatchObject({ state: "confirmed", from_member: dana, to_member: { member_id: alice.agent_id, agent: { handle: alice.handle } } });
  });

  test("a placeholder is named by its name in splits, payers and payments, whatever its case; by member_id as before", async () => {
    const { alice, bob, a, b, groupId } = await tripWith();
    const byName = await ok(a, "add_expense", {
      group_id: groupId,
      description: "Tickets",
      amount: "20.00",
      split: { mode: "equal", among: [{ handle: alice.handle }, { handle: "dana" }] },
    });
    expect(byName.expense.shares.map((x: any) => [x.member.name, x.amount_minor])).toEqual([
      [alice.handle.toUpperCase(), 1000],
      ["Dana", 1000],
    ]);
    const payer = await ok(b, "add_expense", {
      group_id: groupId,
      description: "Taxi",
      amount: "12.00",
      paid_by: [{ handle: "Dana" }],
      split: { mode: "equal", among: [{ handle: "DANA" }, { handle: `@${bob.handle}` }] },
    });
    expect(payer.expense.paid_by).toMatchObject([{ member: { name: "Dana", agent: null }, amount_minor: 1200 }]);
    // The handle an answer showed for her (her member_id) works where a handle goes, as a member_id does.
    const shown = byName.expense.shares[1].handle;
    expect((await ok(a, "record_payment", { group_id: groupId, to: shown, amount: "1.00" })).payment.to_member.name).toBe("Dana");
    expect((await ok(a, "list_expenses", { group_id: groupId, involving: "Dana" })).expenses).toHaveLength(2);
    const removable = (await ok(a, "create_group_invite", { group_id: groupId, name: "Eve" })).invite.placeholder.member_id;
    const removed = await ok(a, "remove_group_member", { group_id: groupId, handle: "eve" });
    expect(removed.group.members.some((m: any) => m.member_id === removable)).toBe(false);
  });

  test("an error about a placeholder names her and says how to refer to her; a name two share is refused with both ids", async () => {
    const { alice, a, groupId, placeholder } = await tripWith();
    const { error } = await call(a, "add_expense", {
      group_id: groupId,
      description: "Lunch",
      amount: "10.00",
      split: { mode: "equal", among: [{ handle: alice.handle }, { handle: "dan" }] },
    });
    expect(error.code).toBe("VALIDATION_ERROR");
    expect(error.details.issues[0].path).toBe("split.among[1].handle");
    expect(error.message).toContain("@dan is not a member of this group");
    expect(error.message).toContain(`“Dana” (quoted) (no account yet): member_id ${placeholder}, or its name`);
    const wrongPayer = await call(a, "record_payment", { group_id: groupId, from: "Dana Smith", amount: "1.00" });
    expect(wrongPayer.error.details.issues[0].path).toBe("from");
    expect(wrongPayer.error.message).toContain(`member_id ${placeholder}`);
    const second = (await ok(a, "create_group_invite", { group_id: groupId, name: "dana" })).invite.placeholder.member_id;
    const twice = await call(a, "record_payment", { group_id: groupId, from: "Dana", amount: "1.00" });
    expect(twice.error.message).toContain("2 members without an account are named “Dana” (quoted)");
    for (const id of [placeholder, second]) expect(twice.error.message).toContain(`member_id ${id}`);
  });
});

/** Where an answer keeps, for v1 clients, an agent field that for a placeholder holds no agent: the field beside it that names the member. */
const KEPT = { agent: "member", from: "from_member", to: "to_member" } as const;

/**
 * Every place an answer names a placeholder with a handle that is no agent's: a `handle` that is not one of `real`,
 * an agent object that is none, a text that calls her @<member_id>. Allowed only where v1 answered so before and the
 * member is said truly beside it: an entry's `handle` with its `member`, or a kept agent field with its member field.
 */
function madeUpHandles(value: unknown, real: Set<string>, placeholders: Set<string>, path = "$", parent?: Record<string, unknown>, key?: string): string[] {
  if (typeof value === "string") {
    return [...placeholders].filter((id) => value.includes(`@${id}`)).map(() => `${path}: "@<member_id>" in text`);
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => madeUpHandles(v, real, placeholders, `${path}[${i}]`, parent, key));
  if (value === null || typeof value !== "object") return [];
  const o = value as Record<string, unknown>;
  const found: string[] = [];
  const isMember = "member_id" in o && "name" in o && "agent" in o;
  if (isMember && (o.agent === null) !== placeholders.has(o.member_id as string))
    found.push(`${path}: agent ${o.agent === null ? "null for an agent" : "set for a placeholder"}`);
  if (typeof o.handle === "string" && !real.has(o.handle)) {
    const isAgentRef = "agent_id" in o && "display_name" in o;
    const beside = isAgentRef && key && key in KEPT ? (parent?.[KEPT[key as keyof typeof KEPT]] as any) : (o.member as any);
    const told = placeholders.has(o.handle) && beside?.member_id === o.handle && beside?.agent === null && typeof beside?.name === "string";
    if (!told) found.push(`${path}.handle: ${o.handle} is no agent's handle`);
  }
  for (const [k, v] of Object.entries(o)) found.push(...madeUpHandles(v, real, placeholders, `${path}.${k}`, o, k));
  return found;
}

test("no answer of any ledger tool, nor get_me or the inbox, names a placeholder by a handle that is no agent's; every field a read answers is declared", async () => {
  const { alice, bob, a, b, groupId, placeholder } = await tripWith("Dana");
  const answers: [string, unknown][] = [];
  const run = async (client: McpClient, name: string, args: Record<string, unknown> = {}) => {
    const data = await ok(client, name, args);
    answers.push([name, data]);
    return data;
  };
  // What the placeholder takes part in: expenses (recurring, refunded), payments both ways, answers, a file.
  const dinner = await run(a, "add_expense", { group_id: groupId, description: "Dinner", amount: "90.00" });
  const taxi = await run(b, "add_expense", { group_id: groupId, description: "Taxi", amount: "12.00", paid_by: [{ handle: "Dana" }], repeat: "monthly" });
  await run(b, "update_expense", { expense_id: taxi.expense.expense_id, expected_version: 1, notes: "Airport" });
  await run(a, "respond_expense", { expense_id: taxi.expense.expense_id, action: "confirm" });
  await run(b, "respond_expense", { expense_id: dinner.expense.expense_id, action: "dispute", reason: "Too much" });
  await run(a, "get_expense", { expense_id: taxi.expense.expense_id });
  await run(a, "delete_expense", { expense_id: dinner.expense.expense_id });
  await run(a, "restore_expense", { expense_id: dinner.expense.expense_id });
  await run(a, "list_recurring", { group_id: groupId });
  await run(b, "stop_recurring", { expense_id: taxi.expense.expense_id });
  await run(a, "add_attachment", { expense_id: dinner.expense.expense_id, filename: "r.png", media_type: "image/png", content_base64: PNG });
  const file = await run(a, "list_attachments", { expense_id: dinner.expense.expense_id });
  await run(a, "delete_attachment", { attachment_id: file.attachments[0].attachment_id });
  await run(a, "record_payment", { group_id: groupId, from: "Dana", amount: "10.00" });
  const pending = await run(a, "record_payment", { group_id: groupId, to: "Dana", amount: "1.00" });
  await run(a, "respond_payment", { payment_id: pending.payment.payment_id, action: "void" });
  await run(b, "record_payment", { to: alice.handle, amount: "1.00" });
  const held = (await run(a, "list_payments", { group_id: groupId, state: "pending" })).payments[0];
  await run(a, "respond_payment", { payment_id: held.payment_id, action: "confirm" });
  // The group itself, and a member without an account who is removed.
  await run(a, "update_group", { group_id: groupId, description: "Spring" });
  await run(a, "archive_group", { group_id: groupId, archived: true });
  await run(a, "archive_group", { group_id: groupId, archived: false });
  await run(a, "create_group_invite", { group_id: groupId, name: "Eve" });
  await run(a, "remove_group_member", { group_id: groupId, handle: "Eve" });
  await run(a, "create_group_invite", { group_id: groupId });
  // Every read of it.
  for (const args of [{ group_id: groupId }, { group_id: groupId, by_currency: true }, {}]) await run(b, "get_balances", args);
  await run(a, "get_group", { group_id: groupId });
  await run(a, "list_groups");
  await run(a, "list_expenses", { group_id: groupId, involving: "Dana" });
  await run(a, "list_payments", { group_id: groupId });
  await run(a, "get_activity", { group_id: groupId });
  await run(a, "get_spending", { group_id: groupId, by: "member" });
  const json = await run(a, "export_group", { group_id: groupId, format: "json" });
  answers.push(["export_group (the JSON document)", JSON.parse(json.content.untrusted_content)]);
  const csv = await run(a, "export_group", { group_id: groupId, format: "csv" });
  await run(a, "get_me");
  await run(a, "get_inbox", { include_seen: true });
  await run(b, "get_inbox", { include_seen: true });

  // Every ledger tool was called, but those that cannot meet a placeholder (before one is added, or without one).
  const apart = ["create_group", "respond_group_invite", "join_group", "leave_group", "open_direct_ledger"];
  const called = new Set(answers.map(([name]) => name));
  expect(TOOLSETS.ledger!.map((t) => t.name).filter((n) => !called.has(n) && !apart.includes(n))).toEqual([]);

  const real = new Set([alice.handle, bob.handle]);
  const eve = (await ok(a, "get_activity", { group_id: groupId })).entries.find((e: any) => e.action === "placeholder_added" && e.summary_md.includes("Eve"));
  const placeholders = new Set([placeholder, eve.refs.member_id]);
  const found = answers.flatMap(([name, data]) => madeUpHandles(data, real, placeholders, name));
  expect(found).toEqual([]);
  // Every field of a read tool's answer is declared in its output schema (a write tool's echo of an object points to
  // the read tool that declares it).
  const schemas = new Map((await a.listTools()).tools.map((t: any) => [t.name, inlineRefs(t.outputSchema)]));
  const read = new Set(Object.values(TOOLSETS).flatMap((set) => set.filter((t) => t.tags.includes("read")).map((t) => t.name)));
  const undeclared = answers.filter(([name]) => read.has(name)).flatMap(([name, data]) => notDeclared(data, schemas.get(name), name));
  expect(undeclared).toEqual([]);
  // Names where it must: placeholders appear in them, by name.
  expect(JSON.stringify(answers)).toContain('"name":"Dana","agent":null');
  // The CSV names each row's members by member_id and name too.
  const header = csv.content.untrusted_content.split("\r\n")[0].split(",");
  const rows = csv.content.untrusted_content
    .trim()
    .split("\r\n")
    .slice(1)
    .map((line: string) => Object.fromEntries(line.split(",").map((cell, i) => [header[i], cell])));
  const dana = rows.filter((r: any) => r.participant === placeholder || r.from === placeholder);
  expect(dana.length).toBeGreaterThan(0);
  for (const r of dana) expect(r.participant === placeholder ? r.participant_name : r.from_name).toBe("Dana");
});

/** The fields of an answer its schema does not declare (a map of free keys, such as refs or a payload, declares them all). */
function notDeclared(value: unknown, schema: any, path: string): string[] {
  if (!schema || value === null || typeof value !== "object") return [];
  const branches: any[] = schema.anyOf ?? [schema];
  if (Array.isArray(value)) return value.flatMap((v, i) => notDeclared(v, branches.find((b) => b.type === "array")?.items, `${path}[${i}]`));
  const object = branches.find((b) => b.type === "object");
  if (!object) return [`${path}: an object where the schema has none`];
  if (!object.properties) return [];
  return Object.entries(value).flatMap(([k, v]) => (k in object.properties ? notDeclared(v, object.properties[k], `${path}.${k}`) : [`${path}.${k}`]));
}

// A one-pixel PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
