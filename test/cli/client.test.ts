// Client mode of the compiled bin/svc (call, tools, login) against a running server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { findTool, inputJsonSchema } from "../../server/tools/catalogue.ts";
import { VERSION } from "../../server/version.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { ensureBuilt, freshConfigHome, svc, svcLine, svcOnTerminal } from "./bin.ts";

// Each test runs bin/svc several times; bunfig.toml's [test] timeout is not read by bun 1.4, so it is set here.
setDefaultTimeout(30_000);

let s: TestServer;
let alice: Agent;
beforeAll(async () => {
  await ensureBuilt();
  s = await startTestServer();
  alice = await s.register("cli-alice");
}, 120_000);
afterAll(() => s.stop());

const as = (key: string) => ["--url", s.url, "--key", key];

describe("svc call", () => {
  test("register_agent without a key prints data as JSON when piped, and the key works", async () => {
    const r = await svc(["call", "register_agent", "handle=cli-bob", "display_name=Bob", "--url", s.url]);
    expect(r.code).toBe(0);
    const data = r.json();
    expect(data.agent.handle).toBe("cli-bob");
    expect(data.api_key).toMatch(/^svc_/);
    expect((await s.ok("get_me", {}, data.api_key)).agent.handle).toBe("cli-bob");
  });

  test("a read tool prints readable text on a terminal, and JSON there with --json", async () => {
    const text = await svcOnTerminal(["call", "get_me", ...as(alice.key)]);
    expect(text.code).toBe(0);
    expect(text.output).toStartWith("@cli-alice (");
    expect(text.output).toContain("  verified: nothing yet\n");
    expect(text.output).not.toContain('"handle"');
    expect(text.output).not.toContain(alice.agent_id);
    const ids = await svcOnTerminal(["call", "get_me", "--ids", ...as(alice.key)]);
    expect(ids.output).toContain(`  agent_id ${alice.agent_id}\n`);
    const json = await svcOnTerminal(["call", "get_me", "--json", ...as(alice.key)]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.output).agent.handle).toBe("cli-alice");
    // --json-out, its older name, still works; --json means the same on status and tools.
    expect(JSON.parse((await svcOnTerminal(["call", "get_me", "--json-out", ...as(alice.key)])).output).agent.handle).toBe("cli-alice");
    expect(JSON.parse((await svcOnTerminal(["status", "--json", ...as(alice.key)])).output).agent.handle).toBe("cli-alice");
  });

  test("key=value values are JSON when they parse, text where the schema takes only text", async () => {
    // since must be a string and limit a number: "0" stays text, "5" and "true" become JSON.
    const r = await svc(["call", "get_inbox", "since=0", "include_seen=true", "limit=5", ...as(alice.key)]);
    expect(r.code).toBe(0);
    expect(r.json().items).toEqual([]);
    const named = await svc(["call", "update_me", "display_name=12", ...as(alice.key)]);
    expect(named.code).toBe(0);
    expect(named.json().agent.display_name).toBe("12");
  });

  test("--args takes the arguments as one object, also from stdin; pairs override it", async () => {
    const r = await svc(["call", "update_me", "--args", "-", ...as(alice.key)], { stdin: '{"display_name":"Args stdin","description":"d"}' });
    expect(r.json().agent).toMatchObject({ display_name: "Args stdin", description: "d" });
    const o = await svc(["call", "update_me", "--args", '{"display_name":"A","description":"y"}', "display_name=Alicia", ...as(alice.key)]);
    expect(o.json().agent).toMatchObject({ display_name: "Alicia", description: "y" });
  });

  test("the object as an argument (- or {...}) still works after --json, as before --json meant output", async () => {
    const r = await svc(["call", "update_me", "--json", "-", ...as(alice.key)], { stdin: '{"display_name":"From stdin","description":"d"}' });
    expect(r.code).toBe(0);
    expect(r.json().agent).toMatchObject({ display_name: "From stdin", description: "d" });
    const o = await svc(["call", "update_me", "--json", '{"display_name":"A","description":"x"}', "display_name=Alice", ...as(alice.key)]);
    expect(o.json().agent).toMatchObject({ display_name: "Alice", description: "x" });
  });

  test("a write gets a fresh idempotency key per call unless one is given", async () => {
    const first = (await svc(["call", "rotate_contact_code", ...as(alice.key)])).json().code;
    const second = (await svc(["call", "rotate_contact_code", ...as(alice.key)])).json().code;
    expect(second).not.toBe(first);
    const fixed = ["call", "rotate_contact_code", "idempotency_key=cli-fixed-key-1", ...as(alice.key)];
    const a = (await svc(fixed)).json().code;
    expect((await svc(fixed)).json().code).toBe(a);
  });

  test("validation error: message and suggested action on stderr, exit 2", async () => {
    const r = await svc(["call", "register_agent", "handle=NO", "display_name=x", "--url", s.url]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("VALIDATION_ERROR");
    expect(r.stderr).toContain("- handle:");
    expect(r.stderr).toContain("suggested action:");
  });

  test("auth error: a bad or missing key exits 3; a missing key is named", async () => {
    const bad = await svc(["call", "get_me", ...as("svc_not-a-key")]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain("UNAUTHENTICATED");
    expect(bad.stderr).toContain("suggested action:");
    const none = await svc(["call", "get_me", "--url", s.url]);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain("No API key was sent");
  });

  test("SVC_URL and SVC_API_KEY stand in for the flags", async () => {
    const r = await svc(["call", "get_me"], { env: { SVC_URL: s.url, SVC_API_KEY: alice.key } });
    expect(r.code).toBe(0);
    expect(r.json().agent.handle).toBe("cli-alice");
  });

  test("not found exits 4, conflict 5, unreachable server 7, usage errors 2", async () => {
    const unknown = await svc(["call", "no_such_tool", "--url", s.url]);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toContain("svc tools");
    const contact = await svc(["call", "add_contact", "handle=cli-nobody", ...as(alice.key)]);
    expect(contact.code).toBe(4);
    const taken = await svc(["call", "register_agent", "handle=cli-alice", "display_name=Again", "--url", s.url]);
    expect(taken.code).toBe(5);
    expect(taken.stderr).toContain("CONFLICT");
    const down = await svc(["call", "get_me", "--url", "http://127.0.0.1:9", "--key", alice.key]);
    expect(down.code).toBe(7);
    expect(down.stderr).toContain("could not reach");
    expect((await svc(["call", "get_me", "oops", ...as(alice.key)])).code).toBe(2);
    expect((await svc(["call", "get_me", "--json", "[1]", ...as(alice.key)])).code).toBe(2);
    expect((await svc(["call", "get_me", "--no-such-flag"])).code).toBe(2);
  });
});

describe("svc tools", () => {
  test("lists every tool of GET /v1/tools", async () => {
    const r = await svc(["tools", "--url", s.url]);
    expect(r.code).toBe(0);
    const listed = r.json();
    const served = ((await (await s.raw("/v1/tools")).json()) as any).data;
    expect(listed.tools.map((t: any) => t.name)).toEqual(served.tools.map((t: any) => t.name));
    const text = await svcOnTerminal(["tools", "--url", s.url]);
    expect(text.output).toMatch(/^register_agent +write +Register an agent$/m);
  });

  test("describes one tool: arguments, output and an example", async () => {
    const text = await svcOnTerminal(["tools", "register_agent", "--url", s.url]);
    expect(text.code).toBe(0);
    expect(text.output).toMatch(/^ {2}handle +required +string +3-32 of a-z 0-9 _ -/m);
    expect(text.output).toContain("Example:\n  svc call register_agent handle=alice display_name=Alice");
    const nested = await svcOnTerminal(["tools", "add_expense", "--url", s.url]);
    expect(nested.output).toContain("Example (made-up ids: take group_id from list_groups):");
    expect(nested.output).toContain(`split='{"mode":"shares","among":[{"handle":"alice","value":2},{"handle":"bob","value":1}]}'`);
    const json = await svc(["tools", "register_agent", "--url", s.url]);
    expect(json.json().input_schema.required).toContain("handle");
    expect((await svc(["tools", "no_such_tool", "--url", s.url])).code).toBe(4);
  });

  test("a mistyped tool or field name is answered with the nearest names", async () => {
    const tool = await svc(["tools", "get_balance", "--url", s.url]);
    expect(tool.code).toBe(4);
    expect(tool.stderr).toContain("there is no tool named get_balance. Did you mean get_balances?");
    const call = await svc(["call", "list_expense", ...as(alice.key)]);
    expect(call.code).toBe(4);
    expect(call.stderr).toContain("Did you mean list_expenses?");
    const field = await svc(["call", "get_balances", "groupid=x", ...as(alice.key)]);
    expect(field.code).toBe(2);
    expect(field.stderr).toContain('get_balances has no field "groupid". Did you mean group_id?');
    expect(field.stderr).toContain("Its fields: group_id");
  });
});

describe("ledger answers for people", () => {
  let groupId: string;
  beforeAll(async () => {
    const bob = await s.register("cli-ledger-bob");
    const { group } = await s.ok("create_group", { name: "Lisbon", currency: "EUR" }, alice.key);
    groupId = group.group_id;
    const { invite } = await s.ok("create_group_invite", { group_id: groupId }, alice.key);
    await s.ok("join_group", { invite_code: invite.code }, bob.key);
    await s.ok(
      "add_expense",
      {
        group_id: groupId,
        description: "Dinner at Rosa's",
        amount: "75.00",
        split: {
          mode: "shares",
          among: [
            { handle: "cli-alice", value: 1 },
            { handle: "cli-ledger-bob", value: 2 },
          ],
        },
      },
      alice.key,
    );
    await s.ok("record_payment", { group_id: groupId, to: "cli-alice", amount: "10.00" }, bob.key);
  });

  test("on a terminal, balances and settle-up are sentences and expenses a table; piped, the same call is JSON", async () => {
    const balances = await svcOnTerminal(["call", "get_balances", `group_id=${groupId}`, ...as(alice.key)]);
    expect(balances.code).toBe(0);
    expect(balances.output).toContain("Balances (EUR):\n  cli-alice is owed 50.00 EUR\n  cli-ledger-bob owes 50.00 EUR");
    // bob's pending 10.00 counts in settle-up as if confirmed, and the answer says so
    expect(balances.output).toContain(
      "To settle up, the fewest transfers that settle the group, counting the payments waiting for confirmation as if confirmed:\n  cli-ledger-bob owes cli-alice 40.00 EUR",
    );
    expect(balances.output).toContain("cli-ledger-bob paid cli-alice 10.00 EUR: waiting for cli-alice to confirm");
    const mine = await svcOnTerminal(["call", "get_balances", ...as(alice.key)]);
    expect(mine.output).toContain(
      "With each person:\n  cli-ledger-bob owes you 50.00 EUR (Lisbon: +50.00 EUR); to settle, counting the payments waiting for confirmation: +40.00 EUR",
    );
    const expenses = await svcOnTerminal(["call", "list_expenses", `group_id=${groupId}`, ...as(alice.key)]);
    expect(expenses.output).toMatch(/^DATE +DESCRIPTION +AMOUNT +PAID BY +STATE$/m);
    expect(expenses.output).toMatch(/^2026-11-22 +Dinner at Rosa's +75\.00 EUR +cli-alice +active$/m);
    expect((await svc(["call", "get_balances", `group_id=${groupId}`, ...as(alice.key)])).json().members).toHaveLength(2);
  });

  test("svc call adds a placeholder member by name; on a terminal the group and its balances name it", async () => {
    const { group } = await s.ok("create_group", { name: "Hut", currency: "EUR" }, alice.key);
    const added = await svc(["call", "create_group_invite", `group_id=${group.group_id}`, "name=Dana", ...as(alice.key)]);
    expect(added.code).toBe(0);
    const { invite } = added.json();
    expect(invite.placeholder.claim_url).toContain(`/claim/${invite.code}`);
    await s.ok(
      "add_expense",
      { group_id: group.group_id, description: "Wood", amount: "8.00", split: { mode: "equal", among: [{ member_id: invite.placeholder.member_id }] } },
      alice.key,
    );
    const shown = await svcOnTerminal(["call", "get_group", `group_id=${group.group_id}`, ...as(alice.key)]);
    expect(shown.output).toContain(`Dana (no account yet, member_id ${invite.placeholder.member_id}) owes 8.00 EUR`);
    const balances = await svcOnTerminal(["call", "get_balances", `group_id=${group.group_id}`, ...as(alice.key)]);
    expect(balances.output).toContain("Dana (no account yet) owes cli-alice 8.00 EUR");
  });

  test("export_group -o FILE writes the plain CSV; -o - prints it; other tools have no file to write", async () => {
    const dir = freshConfigHome();
    const file = join(dir, "lisbon.csv");
    const r = await svc(["call", "export_group", `group_id=${groupId}`, "format=csv", "-o", file, ...as(alice.key)]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`svc: wrote ${file}`);
    const exported = await s.ok("export_group", { group_id: groupId, format: "csv" }, alice.key);
    expect(readFileSync(file, "utf8")).toBe(exported.content.untrusted_content);
    expect(readFileSync(file, "utf8")).toStartWith("record,id,date,description");
    const printed = await svc(["call", "export_group", `group_id=${groupId}`, "format=csv", "-o", "-", ...as(alice.key)]);
    expect(printed.stdout).toBe(exported.content.untrusted_content);
    const none = await svc(["call", "get_me", "-o", file, ...as(alice.key)]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("get_me answers no file to write");
  });
});

describe("names and splits without JSON", () => {
  let bob: Agent;
  let groupId: string;
  beforeAll(async () => {
    bob = await s.register("cli-short-bob");
    const { group } = await s.ok("create_group", { name: "Porto weekend", currency: "EUR" }, alice.key);
    groupId = group.group_id;
    const { invite } = await s.ok("create_group_invite", { group_id: groupId }, alice.key);
    await s.ok("join_group", { invite_code: invite.code }, bob.key);
  });

  test("split=equal among=... and paid_by=handle:amount,... build the tool's JSON; a group is named instead of its id", async () => {
    const equal = await svc([
      "call",
      "add_expense",
      "group=porto WEEKEND",
      "description=Taxi",
      "amount=12.00",
      "split=equal",
      "among=cli-alice,cli-short-bob",
      ...as(alice.key),
    ]);
    expect(equal.code).toBe(0);
    expect(equal.json().expense).toMatchObject({
      group_id: groupId,
      split: { mode: "equal", among: [{ handle: "cli-alice" }, { handle: "cli-short-bob" }] },
      shares: [
        { handle: "cli-alice", amount: "6.00" },
        { handle: "cli-short-bob", amount: "6.00" },
      ],
    });
    const shares = await svc(
      [
        "call",
        "add_expense",
        "group_id=Porto weekend",
        "description=Dinner",
        "amount=60.00",
        "paid_by=cli-alice:40,cli-short-bob:20",
        "split=shares",
        "among=cli-alice:2,cli-short-bob:1",
      ].concat(as(alice.key)),
    );
    expect(shares.code).toBe(0);
    expect(shares.json().expense).toMatchObject({
      paid_by: [
        { handle: "cli-alice", amount: "40.00" },
        { handle: "cli-short-bob", amount: "20.00" },
      ],
      split: {
        mode: "shares",
        among: [
          { handle: "cli-alice", value: 2 },
          { handle: "cli-short-bob", value: 1 },
        ],
      },
      shares: [
        { handle: "cli-alice", amount: "40.00" },
        { handle: "cli-short-bob", amount: "20.00" },
      ],
    });
    // One payer without an amount paid it all; split=MODE alone is every member.
    const one = await svc([
      "call",
      "add_expense",
      "group=Porto weekend",
      "description=Museum",
      "amount=30.00",
      "paid_by=cli-short-bob",
      "split=equal",
      ...as(bob.key),
    ]);
    expect(one.json().expense).toMatchObject({ paid_by: [{ handle: "cli-short-bob", amount: "30.00" }], split: { mode: "equal" } });
    const bad = await svc(["call", "add_expense", "group=Porto weekend", "description=X", "amount=1.00", "split=halves", ...as(alice.key)]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("split=halves: the mode is one of equal, exact, percent, shares, adjustment.");
  });

  test("a name that fits several groups, or none, is an error listing them", async () => {
    const a = (await s.ok("create_group", { name: "Twin", currency: "EUR" }, alice.key)).group.group_id;
    const b = (await s.ok("create_group", { name: "twin", currency: "EUR" }, alice.key)).group.group_id;
    const several = await svc(["call", "get_balances", "group=TWIN", ...as(alice.key)]);
    expect(several.code).toBe(2);
    expect(several.stderr).toContain('2 of your groups are named "TWIN"');
    expect(several.stderr).toContain(`  Twin: group_id=${a}`);
    expect(several.stderr).toContain(`  twin: group_id=${b}`);
    const none = await svc(["call", "get_balances", "group=Nowhere", ...as(alice.key)]);
    expect(none.code).toBe(4);
    expect(none.stderr).toContain('none of your groups is named "Nowhere"');
    expect(none.stderr).toContain(`  Porto weekend: group_id=${groupId}`);
    expect((await svc(["call", "get_balances", `group_id=${a}`, ...as(alice.key)])).json().group_id).toBe(a);
  });

  test("on a terminal: balances per currency, an expense's original currency and history, inbox and activity without ids unless --ids", async () => {
    const { expense } = await s.ok(
      "add_expense",
      { group_id: groupId, description: "Port wine", amount: "20.00", currency: "USD", exchange_rate: "0.9", split: { mode: "equal" } },
      alice.key,
    );
    await s.ok("update_expense", { expense_id: expense.expense_id, expected_version: 1, description: "Port wine tasting" }, alice.key);
    const balances = await svcOnTerminal(["call", "get_balances", "group=Porto weekend", "by_currency=true", ...as(alice.key)]);
    expect(balances.code).toBe(0);
    expect(balances.output).toContain(
      "In USD (converted to EUR as each amount was):\n  cli-alice: paid 20.00, share 10.00, payments sent 0.00, received 0.00; net +10.00 USD = +9.00 EUR",
    );
    expect(balances.output).toMatch(/^In EUR:$/m);
    const shown = await svcOnTerminal(["call", "get_expense", `expense_id=${expense.expense_id}`, ...as(alice.key)]);
    expect(shown.output).toContain("Port wine tasting: 18.00 EUR on ");
    expect(shown.output).toContain("  given as 20.00 USD, at 0.9 EUR per USD\n");
    expect(shown.output).toMatch(
      /History:\n {2}v1 \S+ \S+ created by cli-alice: 18\.00 EUR \(20\.00 USD at 0\.9\), paid by cli-alice 18\.00\n {2}v2 \S+ \S+ updated by cli-alice \(description\)/,
    );
    const inbox = await svcOnTerminal(["call", "get_inbox", "since=0", "include_seen=true", ...as(bob.key)]);
    expect(inbox.output).toMatch(/^\d+ items? from the cursor, none marked seen; /);
    expect(inbox.output).toContain("ledger.expense_added from @cli-alice (needs a decision)\n  @cli-alice added “Taxi”");
    expect(inbox.output).not.toContain("item_id");
    expect(inbox.output).not.toContain(expense.expense_id);
    const inboxIds = await svcOnTerminal(["call", "get_inbox", "since=0", "include_seen=true", "--ids", ...as(bob.key)]);
    expect(inboxIds.output).toContain(`expense_id=${expense.expense_id}`);
    expect(inboxIds.output).toMatch(/ {2}item_id=[0-9a-f-]{36} /);
    const activity = await svcOnTerminal(["call", "get_activity", "group=Porto weekend", ...as(alice.key)]);
    expect(activity.output).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d {2}@cli-alice changed “Port wine tasting”/);
    expect(activity.output).not.toContain(expense.expense_id);
    const activityIds = await svcOnTerminal(["call", "get_activity", "group=Porto weekend", "--ids", ...as(alice.key)]);
    expect(activityIds.output).toContain(`expense_id=${expense.expense_id}`);
  });

  test("the footer names each next tool once: get_inbox is not repeated after the inbox line", async () => {
    const me = await svcOnTerminal(["call", "get_me", ...as(bob.key)]);
    expect(me.output).toMatch(/^inbox: \d+ unread, \d+ waiting for you \(svc call get_inbox\)\nnext: list_contacts, get_contact_code$/m);
    const piped = await svc(["call", "get_me", ...as(bob.key)]);
    expect(piped.json().suggested_next).toEqual(["get_inbox", "list_contacts", "get_contact_code"]);
  });
});

describe("hints name the command line", () => {
  test("a missing or refused key points at svc login with this server's URL", async () => {
    const none = await svc(["call", "get_me", "--url", s.url]);
    expect(none.stderr).toContain(`Run: svc login --url ${s.url} (it connects through the server's join page), or svc login --key KEY --url ${s.url} `);
    expect(none.stderr).not.toContain("Authorization");
    const bad = await svc(["call", "get_me", ...as("svc_not-a-key")]);
    expect(bad.stderr).toContain("The server refused the API key");
    expect(bad.stderr).toContain("svc login --key KEY");
  });

  test("register_agent on a terminal ends with the svc login line that stores its key", async () => {
    const r = await svcOnTerminal(["call", "register_agent", "handle=cli-hinted", "display_name=Hinted", "--url", s.url]);
    expect(r.code).toBe(0);
    expect(r.output).toMatch(new RegExp(`svc login --key svc_\\S+ --url ${s.url.replaceAll(".", "\\.")}`));
  });
});

describe("svc login", () => {
  test("stores URL and key (mode 600) so call needs no flags", async () => {
    const home = freshConfigHome();
    const r = await svc(["login", "--key", alice.key, "--url", s.url], { env: { XDG_CONFIG_HOME: home } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("@cli-alice");
    const file = join(home, "svc", "config.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ url: s.url, api_key: alice.key });
    const me = await svc(["call", "get_me"], { env: { XDG_CONFIG_HOME: home } });
    expect(me.code).toBe(0);
    expect(me.json().agent.handle).toBe("cli-alice");
  });

  test("flags override the stored settings, and the stored key is never sent to another URL", async () => {
    const home = freshConfigHome();
    await svc(["login", "--key", alice.key, "--url", s.url], { env: { XDG_CONFIG_HOME: home } });
    const bob = await s.register("cli-login-bob");
    const override = await svc(["call", "get_me", "--key", bob.key], { env: { XDG_CONFIG_HOME: home } });
    expect(override.json().agent.handle).toBe("cli-login-bob");
    // Another server, which records what it is sent: the stored key must not reach it.
    const seen: (string | null)[] = [];
    const other = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        seen.push(req.headers.get("authorization"));
        return req.method === "GET"
          ? Response.json({ ok: true, data: { tool: { name: "get_me", public: false, idempotent: false, input_schema: {} } } })
          : Response.json({ ok: false, error: { code: "UNAUTHENTICATED", message: "no", suggested_action: "sign in" } }, { status: 401 });
      },
    });
    try {
      const r = await svc(["call", "get_me", "--url", `http://127.0.0.1:${other.port}`], { env: { XDG_CONFIG_HOME: home } });
      expect(r.code).toBe(3);
      expect(r.stderr).toContain("No API key was sent");
      expect(seen).toEqual([null, null]);
    } finally {
      other.stop(true);
    }
  });

  test("a key the server refuses is not stored (exit 3)", async () => {
    const home = freshConfigHome();
    const r = await svc(["login", "--key", "svc_wrong", "--url", s.url], { env: { XDG_CONFIG_HOME: home } });
    expect(r.code).toBe(3);
    expect(() => statSync(join(home, "svc", "config.json"))).toThrow();
  });
});

describe("svc completion", () => {
  let script: string;
  beforeAll(async () => {
    script = (await svc(["completion", "bash"])).stdout;
  });

  /** What bash offers at the end of `line`, through the script svc completion bash prints. */
  async function bashOffers(line: string): Promise<string[]> {
    const r = await svcLine(
      `${script}\nCOMP_LINE=${JSON.stringify(line)}; COMP_POINT=\${#COMP_LINE}; _svc_complete 2>/dev/null; printf '%s\\n' "\${COMPREPLY[@]}"`,
    );
    expect(r.code).toBe(0);
    return r.stdout.split("\n").filter(Boolean);
  }

  test("bash completes commands, tool names, a tool's fields and the values of a field with a fixed set", async () => {
    expect(await bashOffers("svc ca")).toEqual(["call"]);
    expect(await bashOffers("svc call get_bal")).toEqual(["get_balances"]);
    expect(await bashOffers("svc call respond_payment ")).toEqual(["payment_id=", "action="]);
    expect(await bashOffers("svc call respond_payment payment_id=x act")).toEqual(["action="]);
    // bash splits words at "=", so it is offered what follows it
    const actions = (inputJsonSchema(findTool("respond_payment")!) as any).properties.action.enum;
    expect(actions).toContain("confirm");
    expect(await bashOffers("svc call respond_payment action=")).toEqual(actions);
    expect(await bashOffers("svc invites ")).toEqual(["create", "list", "revoke"]);
    expect(await bashOffers("svc call get_me --js")).toEqual(["--json"]);
    expect(await bashOffers("svc completion ")).toEqual(["bash", "zsh", "fish"]);
    // The shorthands too: group= beside group_id=, split=MODE, and among= once split is given.
    expect(await bashOffers("svc call get_balances ")).toEqual(["group_id=", "by_currency=", "group="]);
    expect(await bashOffers("svc call add_expense split=")).toEqual(["equal", "exact", "percent", "shares", "adjustment"]);
    expect(await bashOffers("svc call add_expense split=equal am")).toEqual(["amount=", "amount_minor=", "among="]);
  });

  test("zsh and fish, in the shells themselves, complete tool names and a tool's fields", async () => {
    const setup = Bun.spawnSync(["bash", join(import.meta.dir, "ensure-shells.sh")], { stdout: "inherit", stderr: "inherit" });
    if (setup.exitCode !== 0) throw new Error("zsh and fish could not be installed (test/cli/ensure-shells.sh)");
    const PATH = `${join(import.meta.dir, "../../bin")}:${process.env.PATH}`;
    const run = async (cmd: string[]) => {
      const proc = Bun.spawn(cmd, { env: { ...process.env, PATH }, stdout: "pipe", stderr: "pipe" });
      const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      expect(code).toBe(0);
      return out.split("\n").filter(Boolean);
    };
    // zsh without compinit: compdef is a no-op and compadd prints what the script hands it.
    const zshOffers = (...words: string[]) =>
      run([
        "zsh",
        "-c",
        `compdef() { :; }; compadd() { local on=0; for a in "$@"; do if (( on )); then print -r -- "$a"; elif [[ $a == -- ]]; then on=1; fi; done }
source <(svc completion zsh); words=(${words.map((w) => JSON.stringify(w)).join(" ")}); CURRENT=${words.length}; _svc`,
      ]);
    expect(await zshOffers("svc", "call", "get_bal")).toEqual(["get_balances"]);
    expect(await zshOffers("svc", "call", "respond_payment", "")).toEqual(["payment_id=", "action="]);
    const fishOffers = (line: string) => run(["fish", "-c", `svc completion fish | source; complete -C ${JSON.stringify(line)}`]);
    expect(await fishOffers("svc call get_bal")).toEqual(["get_balances"]);
    expect((await fishOffers("svc call respond_payment ")).sort()).toEqual(["action=", "payment_id="]);
  });

  test("zsh and fish get scripts that ask svc __complete; an unknown shell is a usage error", async () => {
    expect((await svc(["completion", "zsh"])).stdout).toContain("compdef _svc svc");
    expect((await svc(["completion", "fish"])).stdout).toContain("svc __complete --");
    expect((await svc(["completion", "tcsh"])).code).toBe(2);
    expect((await svc(["__complete", "--", "tools", "export_"])).stdout).toBe("export_group\n");
  });
});

describe("help", () => {
  test("every command has --help with an example; the exit codes are listed once, in svc --help", async () => {
    for (const cmd of [
      ["call"],
      ["tools"],
      ["login"],
      ["logout"],
      ["status"],
      ["completion"],
      ["migrate"],
      ["invites", "create"],
      ["invites", "list"],
      ["invites", "revoke"],
      ["keys", "revoke"],
      ["inbox", "inspect"],
    ]) {
      const r = await svc([...cmd, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/Examples?:\n {2}svc /);
      expect(r.stdout).not.toContain("7  server or network failure");
    }
    expect((await svc(["call", "--help"])).stdout).toContain("Exit codes: svc --help lists them.");
    const root = await svc(["--help"]);
    expect(root.stdout).toContain("Exit codes:\n  0  success\n");
    expect(root.stdout).toContain("7  server or network failure");
  });

  test("an unknown command is one line with the nearest commands, and exits 2", async () => {
    const typo = await svc(["statsu"]);
    expect({ code: typo.code, stdout: typo.stdout, stderr: typo.stderr }).toEqual({
      code: 2,
      stdout: "",
      stderr: "svc: unknown command 'statsu'. Did you mean: svc status?\n",
    });
    // A tool's name, or what follows its verb, points at svc call.
    expect((await svc(["blance"])).stderr).toBe("svc: unknown command 'blance'. Did you mean: svc call get_balances?\n");
    expect((await svc(["get_me"])).stderr).toBe("svc: unknown command 'get_me'. Did you mean: svc call get_me?\n");
    expect((await svc(["xyzzy"])).stderr).toBe("svc: unknown command 'xyzzy'. svc --help lists the commands.\n");
  });

  test("--version is the release of package.json, embedded in the binary", async () => {
    expect((await svc(["--version"])).stdout.trim()).toBe(VERSION);
  });
});
