// The expense pages through real HTTP with a cookie jar: each form is filled as a person would (what the page offers,
// then the fields they change) and checked against what the tools say (get_expense, get_balances, list_payments).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
let g: TestGroup;
const [A, B, C] = ["ep-alice", "ep-bob", "ep-carol"];
beforeAll(async () => {
  s = await startTestServer();
  g = await groupWith(s, [A, B, C], "EUR", "Flat");
}, 60_000);
afterAll(() => s.stop());

const key = (h: string) => g.by[h]!.key;
const browsers = new Map<string, PageClient>();
async function browserOf(handle: string): Promise<PageClient> {
  const known = browsers.get(handle);
  if (known) return known;
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", handle, key(handle));
  browsers.set(handle, b);
  return b;
}

const unescapeHtml = (t: string) =>
  t
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The form posting to `action` as a browser would send it untouched: its inputs, checked boxes, selected options, text. */
function formAt(page: PageResponse, action: string, containing = ""): Record<string, string> {
  const found = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find(
    (f) => f[1] === action && f[2]!.includes(containing),
  );
  if (!found) throw new Error(`no form posting to ${action}`);
  const body = found[2]!;
  const fields: Record<string, string> = {};
  for (const m of body.matchAll(/<input ([^>]*)>/g)) {
    const attr = (n: string) => m[1]!.match(new RegExp(`(?:^| )${n}="([^"]*)"`))?.[1];
    const type = attr("type") ?? "text";
    if ((type === "checkbox" || type === "radio") && !/ checked/.test(m[1]!)) continue;
    fields[attr("name")!] = unescapeHtml(attr("value") ?? "");
  }
  for (const m of body.matchAll(/<select [^>]*name="([^"]+)"[^>]*>([\s\S]*?)<\/select>/g)) {
    fields[m[1]!] = m[2]!.match(/<option value="([^"]*)" selected>/)?.[1] ?? m[2]!.match(/<option value="([^"]*)"/)![1]!;
  }
  for (const m of body.matchAll(/<textarea [^>]*name="([^"]+)"[^>]*>([\s\S]*?)<\/textarea>/g)) fields[m[1]!] = unescapeHtml(m[2]!);
  return fields;
}

/** Fills the add-expense form: the page's defaults, then `changes` (null: the field left out, a box unticked). */
async function addExpense(handle: string, changes: Record<string, string | null>): Promise<PageResponse> {
  const b = await browserOf(handle);
  const at = `/groups/${g.group_id}/expenses/new`;
  const fields = formAt(await b.get(at), at);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete fields[k];
    else fields[k] = v;
  }
  return b.post(at, fields, fields.csrf);
}

/** The expense with this description, with its history (the test's clock stands still: no "newest"). */
async function named(description: string) {
  const list = (await s.ok("list_expenses", { group_id: g.group_id, limit: 100, include_deleted: true }, key(A))).expenses;
  const found = list.filter((e: any) => e.description.untrusted_content === description);
  expect(found).toHaveLength(1);
  return s.ok("get_expense", { expense_id: found[0].expense_id }, key(A));
}
const count = async () => (await s.ok("list_expenses", { group_id: g.group_id, limit: 100, include_deleted: true }, key(A))).expenses.length;
const sharesOf = (e: any) => Object.fromEntries(e.shares.map((x: any) => [x.handle, x.amount]));
const balances = async () =>
  Object.fromEntries((await s.ok("get_balances", { group_id: g.group_id }, key(A))).members.map((m: any) => [m.agent.handle, m.balance_minor]));

describe("adding an expense on its page", () => {
  test("equal among the members ticked: carol unticked, alice and bob share it; the group page links to it", async () => {
    const before = await balances();
    const res = await addExpense(A, { description: "Bread", amount: "9.00", [`in_${C}`]: null, category: "groceries" });
    expect(res.status).toBe(303);
    expect(res.location).toBe(`/groups/${g.group_id}?done=expense`);
    const { expense } = await named("Bread");
    expect(expense).toMatchObject({ description: { untrusted_content: "Bread" }, amount: "9.00", category: "groceries", split: { mode: "equal" } });
    expect(sharesOf(expense)).toEqual({ [A]: "4.50", [B]: "4.50" });
    const after = await balances();
    expect([after[A] - before[A], after[B] - before[B], after[C] - before[C]]).toEqual([450, -450, 0]);
    const group = await (await browserOf(A)).follow(res);
    expect(group.html).toContain("Expense added.");
    expect(group.html).toContain(`<a href="/groups/${g.group_id}/expenses/${expense.expense_id}">“Bread”</a>`);
  });

  test("a refund: the form's kind; balances move the other way, and the pages say it is a refund", async () => {
    const before = await balances();
    const res = await addExpense(B, { kind: "refund", description: "Deposit back", amount: "30.00" });
    expect(res.status).toBe(303);
    const { expense } = await named("Deposit back");
    expect(expense).toMatchObject({ kind: "refund", paid_by: [{ handle: B, amount: "30.00" }] });
    const after = await balances();
    expect([after[A] - before[A], after[B] - before[B], after[C] - before[C]]).toEqual([1000, -2000, 1000]);
    const b = await browserOf(A);
    const group = await b.get(`/groups/${g.group_id}`);
    // Each member by their display name; the line says what the refund means for the reader.
    expect(group.html).toContain(`received by ${B.toUpperCase()}</span> · <strong>you get 10.00 EUR back</strong> <span class="badge">refund</span>`);
    const page = await b.get(`/groups/${g.group_id}/expenses/${expense.expense_id}`);
    expect(page.html).toContain("<h1>Refund: “Deposit back”</h1>");
    expect(page.html).toContain("<h2>Received by</h2>");
    // The edit form keeps it a refund.
    const at = `/groups/${g.group_id}/expenses/${expense.expense_id}/edit`;
    expect(formAt(await b.get(at), at).kind).toBe("refund");
  });

  test("exact amounts, percentages and shares: only the chosen mode's values count", async () => {
    const exact = await addExpense(A, { description: "Exact", amount: "10.00", split_mode: "exact", [`value_${A}`]: "2.00", [`value_${B}`]: "8.00" });
    expect(exact.status).toBe(303);
    expect(sharesOf((await named("Exact")).expense)).toEqual({ [A]: "2.00", [B]: "8.00" });
    const percent = await addExpense(B, { description: "Percent", amount: "20.00", split_mode: "percent", [`value_${A}`]: "25", [`value_${C}`]: "75" });
    expect(percent.status).toBe(303);
    expect((await named("Percent")).expense).toMatchObject({ split: { mode: "percent" }, paid_by: [{ handle: B, amount: "20.00" }] });
    expect(sharesOf((await named("Percent")).expense)).toEqual({ [A]: "5.00", [C]: "15.00" });
    const shares = await addExpense(C, {
      description: "Shares",
      amount: "30.00",
      split_mode: "shares",
      [`value_${A}`]: "1",
      [`value_${B}`]: "2",
      repeat: "monthly",
    });
    expect(shares.status).toBe(303);
    const { expense } = await named("Shares");
    expect(sharesOf(expense)).toEqual({ [A]: "10.00", [B]: "20.00" });
    expect(expense.repeat).toBe("monthly");
  });

  test("another currency with its rate, and several payers: the original amount and rate are kept", async () => {
    const res = await addExpense(A, {
      description: "Taxi in New York",
      amount: "20.00",
      currency: "usd",
      exchange_rate: "0.9",
      paid_by: "several",
      [`paid_${A}`]: "15.00",
      [`paid_${B}`]: "5.00",
      notes: "Airport <run>",
      date: "2026-11-01",
    });
    expect(res.status).toBe(303);
    const { expense } = await named("Taxi in New York");
    expect(expense).toMatchObject({
      amount: "18.00",
      currency: "EUR",
      date: "2026-11-01",
      original: { currency: "USD", amount: "20.00", exchange_rate: "0.9" },
    });
    expect(expense.paid_by.map((p: any) => [p.handle, p.amount])).toEqual([
      [A, "13.50"],
      [B, "4.50"],
    ]);
    expect(sharesOf(expense)).toEqual({ [A]: "6.00", [B]: "6.00", [C]: "6.00" });
    const detail = await (await browserOf(B)).get(`/groups/${g.group_id}/expenses/${expense.expense_id}`);
    expect(detail.status).toBe(200);
    expect(detail.html).toContain("20.00 USD at 0.9 EUR per USD");
    expect(detail.html).toContain("“Airport &lt;run&gt;”");
  });

  test("a refused field comes back beside its input, with what was typed kept; nothing is added", async () => {
    const before = await count();
    const res = await addExpense(A, { description: "Uneven", amount: "10.00", split_mode: "exact", [`value_${A}`]: "3.00", [`value_${B}`]: "4.00" });
    expect(res.status).toBe(400);
    expect(res.html).toMatch(/<p id="f-split-error" class="field-error">Exact amounts sum to 7.00/);
    expect(res.html).toContain('<fieldset aria-describedby="f-split-error"><legend>Split</legend>');
    const kept = formAt(res, `/groups/${g.group_id}/expenses/new`);
    expect(kept).toMatchObject({ description: "Uneven", amount: "10.00", split_mode: "exact", [`value_${A}`]: "3.00", [`value_${B}`]: "4.00" });
    // One member's value: beside that member's input (split.among[1].value is bob, the second listed).
    const bad = await addExpense(A, { description: "Weights", amount: "10.00", split_mode: "shares", [`value_${A}`]: "1", [`value_${B}`]: "-2" });
    expect(bad.status).toBe(400);
    expect(bad.html).toContain(`id="f-value_${B}" name="value_${B}" aria-describedby="f-value_${B}-error" aria-invalid="true"`);
    expect(bad.html).toContain(`<small id="f-value_${B}-error" class="field-error">`);
    expect(await count()).toBe(before);
  });

  test("the form sent twice (a double click, a reload) adds one expense", async () => {
    const b = await browserOf(A);
    const at = `/groups/${g.group_id}/expenses/new`;
    const fields: Record<string, string> = { ...formAt(await b.get(at), at), description: "Twice", amount: "4.00" };
    const before = await count();
    expect((await b.post(at, fields, fields.csrf)).status).toBe(303);
    expect((await b.post(at, fields, fields.csrf)).status).toBe(303);
    expect(await count()).toBe(before + 1);
  });
});

describe("an expense's page", () => {
  test("edit it (prefilled), then a stale form is refused with the conflict; delete and restore it", async () => {
    await addExpense(A, { description: "Lamp", amount: "12.00" });
    const { expense } = await named("Lamp");
    const at = `/groups/${g.group_id}/expenses/${expense.expense_id}`;
    const alice = await browserOf(A);
    const form = formAt(await alice.get(`${at}/edit`), `${at}/edit`);
    expect(form).toMatchObject({ description: "Lamp", amount: "12.00", currency: "EUR", expected_version: "1", split_mode: "equal", paid_by: A });
    const saved = await alice.post(`${at}/edit`, { ...form, amount: "15.00" }, form.csrf);
    expect(saved.status).toBe(303);
    const now = await s.ok("get_expense", { expense_id: expense.expense_id }, key(A));
    expect(now.expense).toMatchObject({ amount: "15.00", version: 2 });
    expect(now.history.map((h: any) => h.action)).toEqual(["created", "updated"]);
    // The same old form, a new key (the page loaded again from history): version 1 is stale.
    const stale = await alice.post(`${at}/edit`, { ...form, amount: "16.00", idempotency_key: crypto.randomUUID() }, form.csrf);
    expect(stale.status).toBe(409);
    expect(stale.html).toContain("it is now version 2, and your form was made from version 1");
    expect(formAt(stale, `${at}/edit`)).toMatchObject({ amount: "16.00", expected_version: "2" });
    expect((await s.ok("get_expense", { expense_id: expense.expense_id }, key(A))).expense.amount).toBe("15.00");

    const detail = await alice.get(at);
    expect(detail.html).toContain("What changed");
    const del = formAt(detail, `${at}/delete`);
    expect((await alice.post(`${at}/delete`, del, del.csrf)).status).toBe(303);
    expect((await s.ok("get_expense", { expense_id: expense.expense_id }, key(A))).expense.deleted).toBe(true);
    const deleted = await alice.get(at);
    expect(deleted.html).toContain('<span class="badge">deleted</span>');
    const restore = formAt(deleted, `${at}/restore`);
    expect((await alice.post(`${at}/restore`, restore, restore.csrf)).status).toBe(303);
    expect((await s.ok("get_expense", { expense_id: expense.expense_id }, key(A))).expense.deleted).toBe(false);
  });

  test("a dispute needs its reason, shown beside the field; with one it is saved", async () => {
    await addExpense(A, { description: "Wine", amount: "6.00" });
    const { expense } = await named("Wine");
    const at = `/groups/${g.group_id}/expenses/${expense.expense_id}`;
    const bob = await browserOf(B);
    const forms = [...(await bob.get(at)).html.matchAll(/name="action" value="dispute"/g)];
    expect(forms).toHaveLength(1);
    const page = await bob.get(at);
    const dispute = [...page.html.matchAll(/<form method="post" action="[^"]+\/respond">([\s\S]*?)<\/form>/g)].find((f) => f[1]!.includes('value="dispute"'))!;
    const keyOf = dispute[1]!.match(/name="idempotency_key" value="([^"]+)"/)![1]!;
    const empty = await bob.post(`${at}/respond`, { action: "dispute", reason: " ", idempotency_key: keyOf });
    expect(empty.status).toBe(400);
    expect(empty.html).toContain('<small id="f-reason-error" class="field-error">');
    const ok = await bob.post(`${at}/respond`, { action: "dispute", reason: "I had none", idempotency_key: crypto.randomUUID() });
    expect(ok.status).toBe(303);
    const now = await s.ok("get_expense", { expense_id: expense.expense_id }, key(A));
    expect(now.expense.responses.map((r: any) => [r.agent.handle, r.action, r.reason?.untrusted_content])).toEqual([[B, "dispute", "I had none"]]);
    expect((await bob.get(at)).html).toContain("You disputed it: “I had none”");
  });
});

describe("the group page's other actions", () => {
  test("confirm all: one button confirms every expense waiting for the human, sent twice repeats nothing", async () => {
    await addExpense(A, { description: "One", amount: "2.00" });
    await addExpense(A, { description: "Two", amount: "4.00" });
    const carol = await browserOf(C);
    const page = await carol.get(`/groups/${g.group_id}`);
    const at = `/groups/${g.group_id}/expenses/confirm-all`;
    const form = formAt(page, at);
    const waiting = [...page.html.matchAll(/name="expense_id" value="([^"]+)"/g)];
    expect(waiting.length).toBeGreaterThan(2);
    // URLSearchParams with the ids repeated, as the browser sends them.
    const ids = [...new Set(waiting.map((m) => m[1]!))];
    const body = { ...form };
    const send = () =>
      fetch(`${s.url}${at}`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: [...carol.cookies].map(([k, v]) => `${k}=${v}`).join("; ") },
        body: new URLSearchParams([...Object.entries(body).filter(([k]) => k !== "expense_id"), ...ids.map((id) => ["expense_id", id] as [string, string])]),
      });
    expect((await send()).status).toBe(303);
    expect((await send()).status).toBe(303);
    for (const id of ids) {
      const { expense } = await s.ok("get_expense", { expense_id: id }, key(C));
      expect(expense.responses.filter((r: any) => r.agent.handle === C).map((r: any) => r.action)).toEqual(["confirm"]);
    }
    const after = await carol.get(`/groups/${g.group_id}`);
    expect(after.html).not.toContain(at);
  });

  test("record a payment on the form (a refused amount beside its field), the payee confirms, either side voids it", async () => {
    const bob = await browserOf(B);
    const at = `/groups/${g.group_id}/payments`;
    const form = formAt(await bob.get(`/groups/${g.group_id}`), at, 'name="form"');
    const bad = await bob.post(at, { ...form, to: A, amount: "abc", note: "cash" }, form.csrf);
    expect(bad.status).toBe(400);
    expect(bad.html).toContain('<small id="f-pay-amount-error" class="field-error">');
    expect(formAt(bad, at, 'name="form"')).toMatchObject({ to: A, amount: "abc", note: "cash" });
    const good = await bob.post(at, { ...formAt(bad, at, 'name="form"'), amount: "3.00" }, form.csrf);
    expect(good.status).toBe(303);
    const payment = (await s.ok("list_payments", { group_id: g.group_id }, key(A))).payments[0];
    expect(payment).toMatchObject({ amount: "3.00", from: { handle: B }, to: { handle: A }, note: { untrusted_content: "cash" }, state: "pending" });
    await s.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, key(A));
    const before = await balances();
    const page = await bob.get(`/groups/${g.group_id}`);
    const voidForm = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find((f) =>
      f[2]!.includes(`aria-label="Void the payment of 3.00 from ${B.toUpperCase()} to ${A.toUpperCase()}"`),
    )!;
    const fields = Object.fromEntries([...voidForm[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
    expect((await bob.post(voidForm[1]!, fields, fields.csrf)).status).toBe(303);
    expect((await s.ok("list_payments", { group_id: g.group_id }, key(A))).payments[0].state).toBe("voided");
    const after = await balances();
    expect([after[A] - before[A], after[B] - before[B]]).toEqual([300, -300]);
  });
});
