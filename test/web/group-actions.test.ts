// What a person does on a group's page, through real HTTP with a cookie jar: each button is a tool call through
// invoke() as the browser's client, so it has the tools' effects, idempotency and refusals, and nothing else.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
let g: TestGroup;
beforeAll(async () => {
  s = await startTestServer();
  g = await groupWith(s, ["ga-alice", "ga-bob"], "EUR", "Flat");
  await s.ok("add_expense", { group_id: g.group_id, description: "Groceries", amount: "40.00" }, g.by["ga-alice"]!.key);
}, 60_000);
afterAll(() => s.stop());

async function browserOf(handle: string): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", handle, g.by[handle]!.key);
  return b;
}

/** The hidden fields of the form whose button has this aria-label, as the browser would send them. */
function formOf(page: PageResponse, label: string): { action: string; fields: Record<string, string> } {
  const forms = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
  const found = forms.find((f) => f[2]!.includes(`aria-label="${label}"`));
  if (!found) throw new Error(`no form with the button "${label}"`);
  const fields = Object.fromEntries([...found[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
  return { action: found[1]!, fields };
}

const balances = async () => (await s.ok("get_balances", { group_id: g.group_id }, g.by["ga-alice"]!.key)).members.map((m: any) => m.balance_minor);

describe("a group's page acts through the tools", () => {
  test("bob confirms the expense, records the suggested payment (twice sent, once done), alice confirms it: both at zero", async () => {
    const bob = await browserOf("ga-bob");
    let page = await bob.get(`/groups/${g.group_id}`);
    const confirm = formOf(page, "Confirm “Groceries”");
    expect((await bob.post(confirm.action, confirm.fields, confirm.fields.csrf)).status).toBe(303);
    const expense = (await s.ok("list_expenses", { group_id: g.group_id }, g.by["ga-alice"]!.key)).expenses[0];
    expect(expense.responses.map((r: any) => [r.agent.handle, r.action])).toEqual([["ga-bob", "confirm"]]);

    page = await bob.get(`/groups/${g.group_id}`);
    const pay = formOf(page, "Record this payment: you paid GA-ALICE 20.00 EUR");
    const first = await bob.post(pay.action, pay.fields, pay.fields.csrf);
    expect(first.status).toBe(303);
    // The same form sent again (a double click, the back button): the same payment, not a second one.
    expect((await bob.post(pay.action, pay.fields, pay.fields.csrf)).status).toBe(303);
    const payments = (await s.ok("list_payments", { group_id: g.group_id }, g.by["ga-alice"]!.key)).payments;
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ amount: "20.00", state: "pending", created_by: { handle: "ga-bob" } });
    expect((await bob.follow(first)).html).toContain("Payment recorded");

    const alice = await browserOf("ga-alice");
    const accept = formOf(await alice.get(`/groups/${g.group_id}`), "Confirm the payment of 20.00 from GA-BOB");
    expect((await alice.post(accept.action, accept.fields, accept.fields.csrf)).status).toBe(303);
    expect(await balances()).toEqual([0, 0]);
    expect((await alice.get(`/groups/${g.group_id}`)).html).toContain("Everyone is settled up.");
  });

  test("a refused call comes back on the page with what the tool refused, in a person's words; an ended browser is sent to sign in", async () => {
    await s.ok("add_expense", { group_id: g.group_id, description: "Lamp", amount: "10.00" }, g.by["ga-alice"]!.key);
    const bob = await browserOf("ga-bob");
    const pay = formOf(await bob.get(`/groups/${g.group_id}`), "Record this payment: you paid GA-ALICE 5.00 EUR");
    const refused = await bob.post(pay.action, { ...pay.fields, amount_minor: "-5" }, pay.fields.csrf);
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('role="alert">Some of what you typed needs a change. Amount: At least 1.</p>');
    // The browser's client disconnected from another: its next action is not done, and it is asked to sign in.
    const web = (await s.ok("list_clients", {}, g.by["ga-bob"]!.key)).clients.filter((c: any) => c.kind === "web");
    for (const w of web) await s.ok("disconnect_client", { client_id: w.client_id }, g.by["ga-bob"]!.key);
    const ended = await bob.post(pay.action, pay.fields, pay.fields.csrf);
    expect(ended.status).toBe(303);
    expect(ended.location).toBe("/groups");
    expect((await s.ok("list_payments", { group_id: g.group_id }, g.by["ga-alice"]!.key)).payments).toHaveLength(1);
  });

  test("a browser's session secret is no bearer token: REST and MCP refuse it", async () => {
    const bob = await browserOf("ga-bob");
    const secret = bob.cookies.get("svc_session")!;
    expect(secret).toStartWith("ws_");
    expect((await s.call("get_me", {}, secret)).status).toBe(401);
  });

  test("a form without the page's CSRF token does nothing", async () => {
    const bob = await browserOf("ga-bob");
    const pay = formOf(await bob.get(`/groups/${g.group_id}`), "Record this payment: you paid GA-ALICE 5.00 EUR");
    expect((await bob.post(pay.action, pay.fields, "csrf_forged")).status).toBe(403);
    expect((await s.ok("list_payments", { group_id: g.group_id }, g.by["ga-alice"]!.key)).payments).toHaveLength(1);
  });
});
