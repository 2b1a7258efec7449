// The group pages a signed-in human reads (/groups, /groups/{id}, the CSV), and the home page, through real HTTP
// with a cookie jar: what they show is what the ledger tools answer the same agent.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { parseCsv } from "../../server/domain/ledger/exchange/csv.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupOf, groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode } from "./page-client.ts";

let s: TestServer;
let g: TestGroup;
let b: PageClient;
beforeAll(async () => {
  s = await startTestServer();
  g = await groupWith(s, ["gp-alice", "gp-bob", "gp-carol"], "EUR", "Lisbon <trip>");
  const { alice, bob } = { alice: g.by["gp-alice"]!, bob: g.by["gp-bob"]! };
  await s.ok(
    "add_expense",
    {
      group_id: g.group_id,
      description: "Dinner at Rosa's",
      amount: "60.00",
      split: {
        mode: "shares",
        among: [
          { handle: "gp-alice", value: 2 },
          { handle: "gp-bob", value: 1 },
        ],
      },
    },
    alice.key,
  );
  await s.ok("add_expense", { group_id: g.group_id, description: "Taxi <b>", amount: "15.00" }, bob.key);
  await s.ok("record_payment", { group_id: g.group_id, to: "gp-alice", amount: "5.00" }, bob.key);
  b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", "gp-alice", alice.key);
}, 60_000);
afterAll(() => s.stop());

/** The cells a spreadsheet splitting on `sep` reads, honouring quotes as they all do. */
function cellsSplitOn(csv: string, sep: string): string[] {
  const cells: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const c = csv[i]!;
    if (quoted) {
      if (c !== '"') cell += c;
      else if (csv[i + 1] === '"') cell += csv[++i];
      else quoted = false;
    } else if (c === '"' && cell === "") quoted = true;
    else if (c === sep || c === "\r" || c === "\n") {
      cells.push(cell);
      cell = "";
    } else cell += c;
  }
  return cells;
}

const text = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

describe("/", () => {
  test("a browser gets the landing page with this server's own URLs; an API client keeps the JSON answer", async () => {
    const page = await s.raw("/", { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain(`&quot;url&quot;: &quot;${s.url}/mcp&quot;`);
    expect(html).toContain(`svc login --url ${s.url}\nsvc status`);
    for (const link of ['href="/account"', 'href="/docs"', 'href="/groups"']) expect(html).toContain(link);
    for (const accept of ["application/json", "*/*", "application/json, text/html"]) {
      const api = await s.raw("/", { headers: { accept } });
      expect(api.status).toBe(404);
      expect(((await api.json()) as any).error.code).toBe("NOT_FOUND");
    }
    expect((await s.raw("/")).headers.get("content-type")).toContain("application/json");
  });

  test("the documentation is readable in a browser, with links between its pages", async () => {
    const index = await b.get("/docs");
    expect(index.status).toBe(200);
    expect(index.html).toContain('href="/docs/overview"');
    const tools = await b.get("/docs/tools");
    expect(tools.html).toContain('href="/docs/tools/add_expense"');
    const tool = await b.get("/docs/tools/add_expense");
    expect(tool.html).toContain("<h1>add_expense: ");
    expect(tool.html).toContain('<div class="scroll" tabindex="0"><table>');
    expect((await b.get("/docs/nothing")).status).toBe(404);
  });
});

describe("/groups", () => {
  test("lists the human's groups with their balance, each linking to its page", async () => {
    const r = await b.get("/groups");
    expect(r.status).toBe(200);
    expect(r.html).toContain(`<a href="/groups/${g.group_id}">Lisbon &lt;trip&gt;</a>`);
    const { groups } = await s.ok("list_groups", {}, g.by["gp-alice"]!.key);
    expect(r.html).toContain(groups[0].my_balance);
  });

  test("a group: balances as a chart and as sentences, settle-up, what waits for confirmation, recent expenses and payments", async () => {
    const r = await b.get(`/groups/${g.group_id}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-security-policy")).toContain("default-src 'none'");
    const balances = await s.ok("get_balances", { group_id: g.group_id }, g.by["gp-alice"]!.key);
    const shown = text(r.html);
    // alice paid 60 (share 40), bob paid 15 (share 5 each): alice +25.00, bob -15.00... as the ledger says; each
    // member by their display name
    for (const m of balances.members) {
      const amount = m.balance.replace(/^[+-]/, "");
      expect(shown).toContain(
        m.balance_minor > 0
          ? `${m.agent.display_name} is owed ${amount}`
          : m.balance_minor < 0
            ? `${m.agent.display_name} owes ${amount}`
            : `${m.agent.display_name} is settled up`,
      );
    }
    expect(balances.settle_up.length).toBeGreaterThan(0);
    for (const t of balances.settle_up) expect(shown).toContain(`${t.from.display_name} owes ${t.to.display_name} ${t.amount} EUR`);
    expect(r.html).toMatch(/<svg class="chart"[^>]*role="img"/);
    expect(r.html.match(/<rect class="(owed|owes)"/g)?.length).toBe(balances.members.filter((m: any) => m.balance_minor !== 0).length);
    // No script but this server's own files (every page loads app.js): nothing inline, nothing of another origin.
    expect(r.html.match(/<script[^>]*>/g)?.filter((tag) => !/^<script src="\/assets\/[a-z-]+\.js" defer>$/.test(tag))).toEqual([]);
    expect(shown).toContain("GP-BOB paid GP-ALICE 5.00 EUR: waiting for GP-ALICE to confirm");
    expect(shown).toContain("“Dinner at Rosa&#39;s” (60.00 EUR, added by you; you lent 20.00 EUR): GP-BOB has not confirmed it yet");
    // text written by members is escaped, never markup
    expect(r.html).toContain("Taxi &lt;b&gt;");
    expect(r.html).toContain(`href="/groups/${g.group_id}/export.csv"`);
  });

  test("spending as a chart: by category, month or member, as get_spending answers", async () => {
    const r = await b.get(`/groups/${g.group_id}`);
    expect(text(r.html)).toContain("75.00 EUR over 2 expenses, refunds taken off.");
    expect(r.html).toContain('<title id="spending-title">Spending by category: general: 75.00 EUR</title>');
    expect(r.html.match(/<rect class="spent"/g)?.length).toBe(1);
    const byMember = await b.get(`/groups/${g.group_id}?spending=member`);
    const { currencies } = await s.ok("get_spending", { group_id: g.group_id, by: "member" }, g.by["gp-alice"]!.key);
    expect(currencies[0].rows.map((x: any) => [x.key, x.paid])).toEqual([
      ["gp-alice", "60.00"],
      ["gp-bob", "15.00"],
      ["gp-carol", "0.00"],
    ]);
    expect(byMember.html).toContain('<title id="spending-title">Paid by each member: GP-ALICE: 60.00 EUR; GP-BOB: 15.00 EUR; GP-CAROL: 0.00 EUR</title>');
    expect(byMember.html).toContain(`<a href="/groups/${g.group_id}?spending=month#spending">By month</a>`);
  });

  test("the CSV download is export_group's text, as a file", async () => {
    const r = await fetch(`${s.url}/groups/${g.group_id}/export.csv`, { headers: { cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; ") } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(r.headers.get("content-disposition")).toMatch(/^attachment; filename="group-[0-9a-f-]+-\d{4}-\d\d-\d\d\.csv"$/);
    const exported = await s.ok("export_group", { group_id: g.group_id, format: "csv" }, g.by["gp-alice"]!.key);
    expect(await r.text()).toBe(exported.content.untrusted_content);
  });

  test("a cell a spreadsheet would run as a formula is defused and quoted, in the tool's CSV and the page's", async () => {
    const alice = g.by["gp-alice"]!;
    const eve = await s.register("gp-eve", { display_name: "=HYPERLINK(1)" });
    const f = await groupOf(s, [alice, eve], "EUR", "=cmd|' /C calc'!A0");
    const typed = ["Taxi;=1+1;", "@SUM(1)", "+1", "-1", "=1+1", "a,b", 'say "hi"'];
    const ids: string[] = [];
    for (const description of [...typed, "tab", "cr"]) {
      const { expense } = await s.ok("add_expense", { group_id: f.group_id, description, amount: "1.00", notes: "=notes" }, eve.key);
      ids.push(expense.expense_id);
    }
    await s.ok("record_payment", { group_id: f.group_id, to: "gp-alice", amount: "1.00", note: "=2+2" }, eve.key);
    // The API refuses control characters; text stored before that rule (or by an import) may still hold them.
    const db = createClient({ url: s.database.syncUrl ?? s.database.dbUrl!, authToken: s.database.authToken });
    try {
      await db.execute({ sql: "UPDATE expenses SET description = ? WHERE expense_id = ?", args: ["\t=1", ids.at(-2)!] });
      await db.execute({ sql: "UPDATE expenses SET description = ? WHERE expense_id = ?", args: ["\r=1", ids.at(-1)!] });
    } finally {
      db.close();
    }
    const tool = (await s.ok("export_group", { group_id: f.group_id, format: "csv" }, alice.key)).content.untrusted_content as string;
    const r = await fetch(`${s.url}/groups/${f.group_id}/export.csv`, { headers: { cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; ") } });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(tool);
    for (const cell of ['"Taxi;\'=1+1;"', '"\'@SUM(1)"', '"\'+1"', '"\'-1"', '"\'=1+1"', '"a,b"', '"say ""hi"""', "\"'\t'=1\"", "\"'\r'=1\"", '"\'=2+2"']) {
      expect(tool).toContain(`,${cell},`);
    }
    const rows = parseCsv(tool).map((x) => x.fields);
    const descriptions = rows.filter((x) => x[0] === "expense_share").map((x) => x[3]);
    expect(new Set(descriptions)).toEqual(new Set(["Taxi;'=1+1;", "'@SUM(1)", "'+1", "'-1", "'=1+1", "a,b", 'say "hi"', "'\t'=1", "'\r'=1"]));
    // Whatever a reader splits on, no cell starts a formula: not a description, a note, a handle or any other.
    for (const sep of [",", ";", "\t"]) for (const cell of cellsSplitOn(tool, sep)) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
  });

  test("a group the human is not in, an unknown id and a malformed one look the same: the 404 page", async () => {
    const other = await groupWith(s, ["gp-dave"], "EUR", "Dave's flat");
    const pages = [`/groups/${other.group_id}`, `/groups/${crypto.randomUUID()}`, "/groups/not-an-id", `/groups/${other.group_id}/export.csv`, "/groups/a/b/c"];
    const answers = await Promise.all(pages.map((p) => b.get(p)));
    for (const r of answers) {
      expect(r.status).toBe(404);
      expect(r.html).not.toContain("Dave");
    }
    const body = (html: string) => html.replace(/name="csrf" value="[^"]+"/g, "");
    expect(new Set(answers.map((r) => body(r.html))).size).toBe(1);
  });

  test("signed out, the pages ask for a sign-in that comes back to /groups; nothing of a group shows", async () => {
    const stranger = new PageClient(s.url);
    const r = await stranger.get(`/groups/${g.group_id}`);
    expect(r.status).toBe(401);
    expect(r.html).toContain("Send me a code");
    expect(r.html).toContain('name="flow" value="groups"');
    expect(r.html).not.toContain("Lisbon");
    expect((await stranger.get(`/groups/${g.group_id}/export.csv`)).status).toBe(401);
  });
});
