// What a connecting agent sees, call by call (issue 47): each call that misled an agent given only the MCP
// instructions, tools/list, errors and suggested_next, made again over MCP with the SDK client.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { grant } from "../auth/oauth-helpers.ts";
import { connectMcp, postRpc, type McpClient } from "./clients.ts";

let s: TestServer;
const clients: McpClient[] = [];
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await s.stop();
});

async function connect(apiKey: string | null, query = ""): Promise<McpClient> {
  const client = await connectMcp("2026-07-28", `${s.url}/mcp${query}`, apiKey ? { authorization: `Bearer ${apiKey}` } : {});
  clients.push(client);
  return client;
}

/** A tools/call: the answer's data, or the error envelope's error. */
async function call(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<{ data?: any; error?: any }> {
  const result: any = await client.callTool({ name, arguments: args });
  const body = JSON.parse(result.content[0].text);
  return result.isError ? { error: body.error } : { data: body };
}

describe("hints", () => {
  test("an unknown tool over MCP names the nearest tool, with a hint for MCP too", async () => {
    const a = await s.register("hint-tool");
    const client = await connect(a.key);
    const { error } = await call(client, "get_balance", { group_id: crypto.randomUUID() });
    expect(error.code).toBe("NOT_FOUND");
    expect(error.message).toContain("did you mean get_balances?");
    expect(error.details).toEqual({ did_you_mean: "get_balances" });
    expect(error.suggested_action).toContain("tools/list");
    expect((await call(client, "balances")).error.details).toEqual({ did_you_mean: "get_balances" });
    expect((await call(client, "zzz")).error.details).toBeUndefined();
  });

  test("UNAUTHENTICATED tells a human who already has a handle to join it, not to register again", async () => {
    const res = await postRpc("2026-07-28", `${s.url}/mcp`, "tools/call", { name: "get_me", arguments: {} });
    expect(res.status).toBe(401);
    const { error } = (await res.json()) as any;
    const action: string = error.data.error.suggested_action;
    expect(action).toContain("join_network");
    expect(action.indexOf("join_network")).toBeLessThan(action.indexOf("register_agent"));
    expect(action).toContain("new to svc");
  });
});

/** Registers `a` and each of `others` as a's accepted contact, with a group of them all (invited and joined). */
async function groupOf(name: string, a: string, ...others: string[]) {
  const [A, ...rest] = await s.contacts(a, ...others);
  const g = (await s.ok("create_group", { name, currency: "EUR", members: others }, A.key)).group;
  for (const o of rest) {
    const inv = (await s.ok("get_inbox", { include_seen: true }, o.key)).items.find((i: any) => i.type === "group.invitation");
    await s.ok("respond_group_invite", { invite_id: inv.refs.invite_id, action: "accept" }, o.key);
  }
  return { A, rest, groupId: g.group_id as string };
}

describe("defaults and words", () => {
  test("a single payer named without an amount paid it all, as paid_by's default says", async () => {
    const { A, rest, groupId } = await groupOf("Payer", "pay-a", "pay-b");
    const client = await connect(A.key);
    const { data, error } = await call(client, "add_expense", {
      group_id: groupId,
      description: "Taxi",
      amount: "30.00",
      paid_by: [{ handle: rest[0]!.handle }],
      idempotency_key: crypto.randomUUID(),
    });
    expect(error).toBeUndefined();
    expect(data.expense.paid_by).toMatchObject([{ handle: "pay-b", amount_minor: 3000 }]);
  });

  test("get_balances says which sign means what in each of its two answers", async () => {
    const { A, rest, groupId } = await groupOf("Signs", "sign-a", "sign-b");
    await s.ok("add_expense", { group_id: groupId, description: "Dinner", amount: "20.00" }, A.key);
    const bob = await connect(rest[0]!.key);
    const listed = (await bob.listTools()).tools.find((t: any) => t.name === "get_balances");
    expect(listed.description).toContain("positive: they owe you; negative: you owe them");
    expect(listed.description).toContain("balance (positive: others owe them)");
    expect(listed.description).not.toContain("owed to them");
    // Bob owes Alice: negative, as the words say.
    const { data } = await call(bob, "get_balances");
    expect(data.counterparties).toMatchObject([{ agent: { handle: "sign-a" }, balance_minor: -1000 }]);
    const inGroup = (await call(bob, "get_balances", { group_id: groupId })).data.members;
    expect(inGroup.find((m: any) => m.agent.handle === "sign-a").balance_minor).toBe(1000);
  });

  test("an answer to a plan points its organiser at update_plan choose_option_id, as create_plan says", async () => {
    const [A, B] = await s.contacts("plan-org", "plan-inv");
    const alice = await connect(A.key);
    const created = await call(alice, "create_plan", {
      title: "Dinner",
      options: [{ starts_at: "2026-12-05T19:00:00Z" }],
      invitees: [B.handle],
      idempotency_key: crypto.randomUUID(),
    });
    const listed = (await alice.listTools()).tools.find((t: any) => t.name === "create_plan");
    expect(listed.description).toContain("update_plan choose_option_id");
    const plan = created.data.plan;
    await s.ok("respond_plan", { plan_id: plan.plan_id, response: "yes", option_ids: [plan.options[0].option_id] }, B.key);
    const { data } = await call(alice, "get_inbox");
    const item = data.items.find((i: any) => i.type === "plan.response");
    expect(item.summary_md).toContain("update_plan choose_option_id");
    expect(data.suggested_next).toContain("update_plan");
  });

  test("a sign-in code's item reads whole in the digest and lives as long as its code", async () => {
    const a = await s.register("code-reader");
    const b = new PageClient(s.url);
    await b.get("/account");
    expect((await b.post("/account/signin/code", { handle: "code-reader", flow: "account" })).status).toBe(303);
    const { data } = await call(await connect(a.key), "get_inbox");
    const item = data.items.find((i: any) => i.type === "auth.join_code");
    expect(Date.parse(item.expires_at) - Date.parse(item.created_at)).toBe(10 * MINUTE);
    expect(Date.parse(item.expires_at)).toBe(Date.parse(item.payload.expires_at));
    const line = data.digest_md.split("\n").find((l: string) => l.includes("Sign-in code"));
    expect(line).toContain("only if they are signing in right now");
    // A line ends after a whole sentence (or a whole word with …), never mid-word.
    expect(line).toMatch(/(\.|…)( \(needs a decision\))?$/);
    s.clock.advance(11 * MINUTE);
    const later = (await call(await connect(a.key), "get_inbox", { include_seen: true })).data;
    expect(later.items.filter((i: any) => i.type === "auth.join_code")).toEqual([]);
  });

  test("error paths are spelled one way, and a missing field says it is required", async () => {
    const { A, groupId } = await groupOf("Paths", "path-a", "path-b");
    const client = await connect(A.key);
    const bad = await call(client, "add_expense", {
      group_id: groupId,
      description: "Lunch",
      amount: "10.00",
      split: { mode: "equal", among: [{ handle: "path-a" }, { handle: 5 }] },
      idempotency_key: crypto.randomUUID(),
    });
    expect(bad.error.details.issues.map((i: any) => i.path)).toEqual(["split.among[1].handle"]);
    const domain = await call(client, "add_expense", {
      group_id: groupId,
      description: "Lunch",
      amount: "10.00",
      split: { mode: "equal", among: [{ handle: "path-a" }, { handle: "path-a" }] },
      idempotency_key: crypto.randomUUID(),
    });
    expect(domain.error.details.issues.map((i: any) => i.path)).toEqual(["split.among[1].handle"]);
    const missing = await call(client, "add_expense", { group_id: groupId, amount: "10.00", idempotency_key: crypto.randomUUID() });
    expect(missing.error.details.issues).toEqual([{ path: "description", message: "required (string)" }]);
    expect(missing.error.message).not.toContain("received undefined");
  });
});

describe("a second app on a handle", () => {
  test("the join page offers an existing suggested handle to sign in with, not to create", async () => {
    await s.register("second-app");
    const j = await s.ok("join_network", { client_name: "Phone App", suggested_handle: "second-app" });
    const b = new PageClient(s.url);
    await b.get(j.enter_url.slice(s.url.length));
    const page = await b.follow(await b.post("/join", { user_code: j.user_code }));
    const [signin, create] = page.html.split("I am new here");
    expect(signin).toContain('value="second-app"');
    expect(create).not.toContain('value="second-app"');
  });

  test("a new app joining the handle leaves an item: who, which client, when, and how to disconnect it in one call", async () => {
    const a = await s.register("joined-twice");
    const j = await s.ok("join_network", { client_name: "Phone App" });
    const b = new PageClient(s.url);
    await b.get(j.enter_url.slice(s.url.length));
    await b.follow(await b.post("/join", { user_code: j.user_code }));
    await signInWithCode(s, b, "join", "joined-twice", a.key);
    await b.post("/join/approve", {});
    const joined = await s.ok("finish_join", { poll_token: j.poll_token });
    expect(joined.created).toBe(false);
    const first = await connect(a.key);
    const { data } = await call(first, "get_inbox");
    const item = data.items.find((i: any) => i.type === "auth.client_connected");
    const phone = (await s.ok("list_clients", {}, a.key)).clients.find((c: any) => c.name === "Phone App");
    expect(item).toMatchObject({
      app: "network",
      from: null,
      refs: { client_id: phone.client_id },
      payload: {
        client_id: phone.client_id,
        client_name: { untrusted_content: "Phone App" },
        kind: "api_key",
        via: "join_network",
        connected_at: s.clock.now().toISOString(),
      },
      suggested_tools: ["list_clients", "disconnect_client"],
    });
    expect(item.summary_md).toContain(`disconnect_client client_id ${phone.client_id}`);
    // One call ends it.
    const gone = await call(first, "disconnect_client", { client_id: item.payload.client_id, idempotency_key: crypto.randomUUID() });
    expect(gone.error).toBeUndefined();
    expect((await s.call("get_me", {}, joined.api_key)).status).toBe(401);
  });
});

test("an app connected through OAuth, or with a key made on the account page, is told to the handle's inbox too", async () => {
  const human = await s.register("oauth-told");
  const b = new PageClient(s.url);
  const { client } = await grant(s, b, human);
  const account = await b.get("/account");
  expect(account.status).toBe(200);
  expect((await b.post("/account/keys", { name: "Laptop script" })).status).toBe(200);
  const items = (await call(await connect(human.key), "get_inbox", { include_seen: true })).data.items.filter((i: any) => i.type === "auth.client_connected");
  const clients = (await s.ok("list_clients", {}, human.key)).clients;
  const idOf = (name: string) => clients.find((c: any) => c.name === name).client_id;
  expect(items.map((i: any) => [i.payload.via, i.payload.kind, i.payload.client_name.untrusted_content, i.payload.client_id])).toEqual([
    ["oauth", "oauth", client.client_name, idOf(client.client_name)],
    ["account_page", "api_key", "Laptop script", idOf("Laptop script")],
  ]);
});
