// MCP Apps views of get_balances, get_group and get_inbox. Over MCP: the tools name their ui:// views to hosts
// that render them, and hosts without Apps get exactly the answers they had. In Chromium: a small host page
// (view-host.ts, with ext-apps' AppBridge) renders each view in a sandboxed frame under the restrictive default
// policy, with a real tool result from the running server; the test reads what a person sees and presses a button
// whose tools/call reaches the server. With SVC_TEST_SCREENSHOTS=1, screenshots land in test-artifacts/.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Frame, Page } from "playwright-core";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { VIEWS } from "../../server/views/index.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, inboxItems, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { SCREENSHOTS } from "../web/audit.ts";
import { launchChromium, type Browser } from "../web/chromium.ts";
import { APPS_CAPABILITIES, ERAS, connectMcp, type McpClient } from "./clients.ts";

const ARTIFACTS = join(import.meta.dir, "../../test-artifacts");
const VIEW_TOOLS = ["get_balances", "get_group", "get_inbox"];

let s: TestServer;
let g: TestGroup;
const clients: McpClient[] = [];
beforeAll(async () => {
  s = await startTestServer();
  // alice paid 30.00 for three: bob and carol owe her 10.00 each
  g = await groupWith(s, ["view-alice", "view-bob", "view-carol"], "EUR", "Lisbon trip");
  await s.ok("add_expense", { group_id: g.group_id, description: "Dinner <b>at the port</b>", amount: "30.00" }, g.by["view-alice"]!.key);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await s.stop();
});

async function connect(era: (typeof ERAS)[number], key: string, capabilities = {}) {
  const c = await connectMcp(era, `${s.url}/mcp`, { authorization: `Bearer ${key}` }, capabilities);
  clients.push(c);
  return c;
}

describe("over MCP", () => {
  test("each view is a self-contained ui:// document of the MCP Apps type, listed and readable", async () => {
    const client = await connect("2026-07-28", g.by["view-alice"]!.key, APPS_CAPABILITIES);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(VIEWS.map((v) => v.uri));
    for (const r of resources) {
      expect(r.uri).toStartWith("ui://svc/");
      expect(r.mimeType).toBe("text/html;profile=mcp-app");
      const [content] = (await client.readResource({ uri: r.uri })).contents;
      expect(content.mimeType).toBe("text/html;profile=mcp-app");
      expect(content.text).toStartWith("<!doctype html>");
      // nothing from outside: no external scripts, styles, fonts or images
      expect(content.text).not.toMatch(/\b(src|href)\s*=\s*["']?(https?:)?\/\//i);
      expect(content.text).not.toMatch(/@import|url\(|@font-face/i);
    }
  }, 30_000);

  test("a host that declares MCP Apps sees the views in _meta.ui; the other tools have none", async () => {
    const { tools } = await (await connect("2026-07-28", g.by["view-alice"]!.key, APPS_CAPABILITIES)).listTools();
    for (const t of tools) {
      const view = VIEWS.find((v) => v.name === { get_balances: "balances", get_group: "group", get_inbox: "inbox" }[t.name as string]);
      if (view) expect({ tool: t.name, meta: t._meta }).toEqual({ tool: t.name, meta: { ui: { resourceUri: view.uri }, "ui/resourceUri": view.uri } });
      else expect({ tool: t.name, meta: t._meta }).toEqual({ tool: t.name, meta: undefined });
    }
    expect(
      TOOLS.filter((t) => t.view)
        .map((t) => t.name)
        .sort(),
    ).toEqual([...VIEW_TOOLS].sort());
  }, 30_000);

  test("a 2026-07-28 host without Apps gets the tool list it always had, without _meta", async () => {
    const { tools } = await (await connect("2026-07-28", g.by["view-alice"]!.key)).listTools();
    expect(tools.filter((t) => t._meta !== undefined)).toEqual([]);
  }, 30_000);

  test.each(ERAS)(
    "the answers are the same with and without Apps support (%s)",
    async (era) => {
      const key = g.by["view-bob"]!.key;
      const plain = await connect(era, key);
      const apps = await connect(era, key, APPS_CAPABILITIES);
      for (const [name, args] of [
        ["get_balances", { group_id: g.group_id }],
        ["get_group", { group_id: g.group_id }],
        ["get_inbox", { since: "0", include_seen: true }],
      ] as const) {
        const a = await plain.callTool({ name, arguments: args });
        const b = await apps.callTool({ name, arguments: args });
        const strip = (r: any) => ({ ...r, _meta: { ...r._meta, "svc/request_id": undefined } });
        expect({ name, result: strip(b) }).toEqual({ name, result: strip(a) });
        expect(Object.keys(a).sort()).toEqual(["_meta", "content", "isError", "structuredContent"]);
      }
    },
    30_000,
  );
});

describe("in Chromium, through an MCP Apps host", () => {
  let browser: Browser;
  let host: ReturnType<typeof Bun.serve>;
  let page: Page;
  const violations: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const built = await Bun.build({ entrypoints: [join(import.meta.dir, "view-host.ts")], target: "browser" });
    if (!built.success) throw new Error(built.logs.join("\n"));
    const script = await built.outputs[0]!.text();
    // the host page, its script, and /mcp passed through to svc (same origin for the page, as a real host's backend)
    host = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const url = new URL(req.url);
        if (url.pathname === "/mcp") {
          const headers = new Headers(req.headers);
          headers.delete("host");
          const res = await fetch(`${s.url}/mcp`, { method: req.method, headers, body: await req.arrayBuffer() });
          return new Response(res.body, { status: res.status, headers: res.headers });
        }
        if (url.pathname === "/host.js") return new Response(script, { headers: { "content-type": "text/javascript" } });
        return new Response(
          `<!doctype html><html><head><meta charset="utf-8"><title>Host</title></head><body style="margin:0">` +
            `<iframe id="view" sandbox="allow-scripts" style="width:340px;height:200px;border:0"></iframe>` +
            `<script type="module" src="/host.js"></script></body></html>`,
          { headers: { "content-type": "text/html" } },
        );
      },
    });
    browser = await launchChromium({ width: 400, height: 900 });
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to|Failed to load/i.test(m.text())) violations.push(m.text());
    });
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    host?.stop(true);
  });

  /** Opens the host on a tool call and waits until the view has rendered the result. */
  async function render(tool: string, args: Record<string, unknown>, key: string, theme: "light" | "dark" = "light"): Promise<Frame> {
    const query = new URLSearchParams({ tool, args: JSON.stringify(args), key, theme });
    await page.goto(`http://127.0.0.1:${host.port}/?${query}`);
    await page.waitForFunction(() => window.hostLog?.ready || window.hostLog?.error, undefined, { timeout: 30_000 });
    expect(await page.evaluate(() => window.hostLog.error ?? null)).toBeNull();
    const frame = page.frames().find((f) => f.parentFrame() === page.mainFrame())!;
    await frame.waitForSelector("main h1", { timeout: 10_000 });
    return frame;
  }
  const calls = () => page.evaluate(() => window.hostLog.calls);
  const shot = async (name: string) => {
    if (SCREENSHOTS) await page.screenshot({ path: join(ARTIFACTS, `view-${name}.png`), fullPage: true });
  };
  const noOverflow = (frame: Frame) => frame.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

  test("balances: the chart, the settle-up transfers, and a button whose record_payment reaches the server", async () => {
    const bob = g.by["view-bob"]!;
    const frame = await render("get_balances", { group_id: g.group_id }, bob.key);
    await shot("balances");
    const row = (handle: string) => frame.locator(`[data-member="${handle}"]`).innerText();
    expect(await row("view-alice")).toContain("VIEW-ALICE (@view-alice)");
    expect(await row("view-alice")).toContain("is owed 20.00 EUR");
    expect(await row("view-bob")).toContain("owes 10.00 EUR");
    expect(await row("view-carol")).toContain("owes 10.00 EUR");
    // the chart: one bar per member, alice's twice as long as bob's, on the other side of the axis
    const width = (handle: string) => frame.locator(`[data-bar="${handle}"]`).evaluate((e) => e.getBoundingClientRect().width);
    expect(await frame.locator(".bar").count()).toBe(3);
    expect(Math.round((await width("view-alice")) / (await width("view-bob")))).toBe(2);
    expect(await frame.locator(".bar.owed").count()).toBe(1);
    expect(await frame.locator(".bar.owes").count()).toBe(2);
    // settle up: bob's own transfer has a button, carol's does not
    const transfers = frame.getByRole("list", { name: "Settle up" });
    expect(await transfers.innerText()).toContain("VIEW-BOB (@view-bob) pays VIEW-ALICE (@view-alice)");
    expect(await transfers.innerText()).toContain("VIEW-CAROL (@view-carol) pays VIEW-ALICE (@view-alice)");
    expect(await frame.getByRole("button").count()).toBe(1);
    expect(await noOverflow(frame)).toBe(true);
    // nothing was written by showing it: the view only read who is asking
    expect((await calls()).map((c) => c.name)).toEqual(["get_me"]);
    expect((await s.ok("list_payments", { group_id: g.group_id }, bob.key)).payments).toEqual([]);

    await frame.getByRole("button", { name: "I paid this" }).click();
    await frame.getByText("Recorded; waiting for @view-alice to confirm.").waitFor();
    await shot("balances-recorded");
    const recorded = (await calls()).find((c) => c.name === "record_payment")!;
    expect(recorded.arguments).toMatchObject({ group_id: g.group_id, from: "view-bob", to: "view-alice", amount_minor: 1000 });
    const { payments } = await s.ok("list_payments", { group_id: g.group_id }, bob.key);
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ state: "pending", amount: "10.00", from: { handle: "view-bob" }, to: { handle: "view-alice" } });
    expect((await inboxItems(s, g.by["view-alice"]!.key, "ledger.payment_to_confirm")).length).toBe(1);
  }, 60_000);

  test("group: the members with roles and balances, and the recent expenses read through the host", async () => {
    const frame = await render("get_group", { group_id: g.group_id }, g.by["view-carol"]!.key);
    await shot("group");
    expect(await frame.locator("h1").innerText()).toBe("Lisbon trip");
    const members = await frame.getByRole("list", { name: "Members" }).innerText();
    for (const h of ["view-alice", "view-bob", "view-carol"]) expect(members).toContain(`${h.toUpperCase()} (@${h})`);
    expect(await frame.locator('[data-member="view-alice"]').innerText()).toContain("owner");
    expect(await frame.locator('[data-member="view-carol"]').innerText()).toContain("owes 10.00 EUR");
    const expenses = frame.getByRole("list", { name: "Recent expenses" });
    // another member's text is shown as text, never as markup
    expect(await expenses.innerText()).toContain("Dinner <b>at the port</b>");
    expect(await expenses.locator("b").count()).toBe(0);
    expect(await expenses.innerText()).toContain("30.00 EUR");
    expect((await calls()).map((c) => [c.name, c.arguments])).toEqual([["list_expenses", { group_id: g.group_id, limit: 5 }]]);
    expect(await noOverflow(frame)).toBe(true);
  }, 60_000);

  test("a placeholder member (no account yet) is shown by its name, and settling with it records by member_id", async () => {
    const alice = g.by["view-alice"]!;
    const { group } = await s.ok("create_group", { name: "Hut", currency: "EUR" }, alice.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, name: "Dana" }, alice.key);
    const id = invite.placeholder.member_id;
    await s.ok(
      "add_expense",
      { group_id: group.group_id, description: "Wood", amount: "6.00", split: { mode: "equal", among: [{ member_id: id }] } },
      alice.key,
    );
    let frame = await render("get_group", { group_id: group.group_id }, alice.key);
    expect(await frame.locator(`[data-member="${id}"]`).innerText()).toContain("Dana (no account yet)");
    frame = await render("get_balances", { group_id: group.group_id }, alice.key);
    expect(await frame.getByRole("list", { name: "Settle up" }).innerText()).toContain("Dana (no account yet) pays VIEW-ALICE (@view-alice)");
    await frame.getByRole("button", { name: "I received this" }).click();
    await frame.getByText("Recorded.").waitFor();
    const recorded = (await calls()).filter((c) => c.name === "record_payment").at(-1)!;
    expect(recorded.arguments).toMatchObject({ group_id: group.group_id, from_member_id: id, to: "view-alice", amount_minor: 600 });
    expect((await s.ok("get_balances", { group_id: group.group_id }, alice.key)).members.every((m: any) => m.balance_minor === 0)).toBe(true);
  }, 60_000);

  test("inbox: what waits for a decision first, with the tools that make it", async () => {
    const frame = await render("get_inbox", { since: "0", include_seen: true }, g.by["view-alice"]!.key, "dark");
    await shot("inbox-dark");
    const waiting = await frame.getByRole("list", { name: "Waiting for your decision" }).innerText();
    expect(waiting).toContain("@view-bob says they paid you 10.00 EUR");
    expect(waiting).toContain("Decide with respond_payment");
    expect(await frame.getByRole("list", { name: "Everything else" }).innerText()).toContain("joined");
    expect(await frame.getByRole("button").count()).toBe(0);
    expect(await calls()).toEqual([]);
  }, 60_000);

  test("the host's theme: dark and light, switched while the view is open", async () => {
    const frame = await render("get_group", { group_id: g.group_id }, g.by["view-bob"]!.key, "dark");
    const background = () => frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const luminance = (rgb: string) =>
      rgb
        .match(/\d+/g)!
        .slice(0, 3)
        .map(Number)
        .reduce((a, b) => a + b, 0) / 3;
    expect(luminance(await background())).toBeLessThan(80);
    await page.evaluate(() => window.setTheme("light"));
    await frame.waitForFunction(() => document.documentElement.dataset.theme === "light");
    expect(luminance(await background())).toBeGreaterThan(200);
    await shot("group-light");
  }, 60_000);

  test("no view loaded anything from outside or broke the host's content policy", () => {
    expect(violations).toEqual([]);
  });
});
