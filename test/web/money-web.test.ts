// Money on the web pages, through real HTTP with a cookie jar (what each form sends, as a browser sends it):
// - either side of a debt records a payment: the payee from a settle-up row ("Record that Dana paid you") or the
//   form's "Paid by", a friend without an account included; the payer's pending payment is not suggested again;
// - a form's idempotency key survives Back: the page asked for again at its address carries the same keys, so a form
//   sent again is replayed, not done twice (a page opened afresh has new ones);
// - after an edit conflict the form carries the current version, with what was typed kept, and says who changed it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { HOUR } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
}, 60_000);
afterAll(() => s.stop());

let counter = 0;
/** alice, bob and Dana (a friend without an account); alice paid 60.00 split equally: bob and Dana owe her 20.00 each. */
async function flat() {
  const p = `mw${++counter}`;
  const [alice, bob] = [`${p}-alice`, `${p}-bob`];
  const g = await groupWith(s, [alice, bob], "EUR", "Flat");
  const key = (h: string) => g.by[h]!.key;
  const dana = (await s.ok("create_group_invite", { group_id: g.group_id, name: "Dana" }, key(alice))).invite.placeholder.member_id as string;
  const among = [{ handle: alice }, { handle: bob }, { member_id: dana }];
  await s.ok("add_expense", { group_id: g.group_id, description: "Groceries", amount: "60.00", split: { mode: "equal", among } }, key(alice));
  return { g, alice, bob, dana, key, at: `/groups/${g.group_id}` };
}

async function browserOf(g: TestGroup, handle: string): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", handle, g.by[handle]!.key);
  return b;
}

const unescapeHtml = (t: string) =>
  t
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The form posting to `action` (and holding `containing`) as a browser sends it untouched. */
function formAt(page: PageResponse, action: string, containing = ""): Record<string, string> {
  const found = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find(
    (f) => f[1] === action && f[2]!.includes(containing),
  );
  if (!found) throw new Error(`no form posting to ${action} with ${containing}`);
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
/** The options a select of a form offers: value and label. */
function optionsOf(page: PageResponse, name: string): [string, string][] {
  const select = page.html.match(new RegExp(`<select [^>]*name="${name}"[^>]*>([\\s\\S]*?)</select>`))![1]!;
  return [...select.matchAll(/<option value="([^"]*)"[^>]*>([^<]*)<\/option>/g)].map((m) => [m[1]!, unescapeHtml(m[2]!)]);
}
const send = (b: PageClient, action: string, fields: Record<string, string>) => b.post(action, fields, fields.csrf!);
const PAYMENT_FORM = 'name="form" value="payment"';

describe("either side of a debt records a payment on the web", () => {
  test("the payee, from a settle-up row: a friend without an account who paid cash, and a member; both count at once", async () => {
    const { g, alice, bob, dana, key, at } = await flat();
    const b = await browserOf(g, alice);
    const shown = await b.get(at);
    expect(shown.html).toContain(`aria-label="Record that Dana paid you 20.00 EUR">Record that Dana paid you</button>`);
    expect(shown.html).toContain(`aria-label="Record that ${bob.toUpperCase()} paid you 20.00 EUR"`);
    expect(shown.html).not.toContain("Record this payment");
    const cash = await send(b, `${at}/payments`, formAt(shown, `${at}/payments`, "Record that Dana paid you"));
    expect(cash.status).toBe(303);
    const done = await b.follow(cash);
    expect(done.html).toContain("It counts at once");
    const [payment] = (await s.ok("list_payments", { group_id: g.group_id }, key(bob))).payments;
    expect(payment).toMatchObject({ from: { agent_id: dana }, to: { handle: alice }, amount: "20.00", state: "confirmed", created_by: { handle: alice } });
    const fromBob = await send(b, `${at}/payments`, formAt(done, `${at}/payments`, `Record that ${bob.toUpperCase()} paid you`));
    expect(fromBob.status).toBe(303);
    const balances = await s.ok("get_balances", { group_id: g.group_id }, key(bob));
    expect(balances.members.map((m: any) => m.balance_minor)).toEqual([0, 0, 0]);
    expect(balances.settle_up).toEqual([]);
  });

  test("the payee, from the form's Paid by (everyone listed, the friend without an account too); refused fields stay beside their input", async () => {
    const { g, alice, bob, dana, key, at } = await flat();
    const b = await browserOf(g, alice);
    const page = await b.get(at);
    expect(page.html).toContain('<label for="f-pay-from">Paid by</label>');
    expect(page.html).toContain('<label for="f-pay-to">Paid to</label>');
    expect(optionsOf(page, "from")).toEqual([
      [alice, `${alice.toUpperCase()} (you)`],
      [bob, bob.toUpperCase()],
      [dana, "Dana (no account yet)"],
    ]);
    const form = formAt(page, `${at}/payments`, PAYMENT_FORM);
    expect([form.from, form.to]).toEqual([alice, bob]);
    // Dana paid 12.50 in cash: received, so it counts at once
    const received = await send(b, `${at}/payments`, { ...form, from: dana, to: alice, amount: "12.50", note: "cash" });
    expect(received.location).toBe(`${at}?done=received`);
    const [p] = (await s.ok("list_payments", { group_id: g.group_id }, key(alice))).payments;
    expect(p).toMatchObject({ from: { agent_id: dana }, to: { handle: alice }, amount: "12.50", state: "confirmed" });
    // neither side is the person: refused, beside "Paid by", what was typed kept
    const again = formAt(await b.get(at), `${at}/payments`, PAYMENT_FORM);
    const refused = await send(b, `${at}/payments`, { ...again, from: bob, to: dana, amount: "3.00" });
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('<small id="f-pay-from-error" class="field-error">You must be the payer (from) or the payee (to).</small>');
    expect(formAt(refused, `${at}/payments`, PAYMENT_FORM)).toMatchObject({ from: bob, to: dana, amount: "3.00" });
    // a payment made, by the same form: pending until bob confirms it
    const made = await send(b, `${at}/payments`, { ...formAt(refused, `${at}/payments`, PAYMENT_FORM), from: alice, to: bob, amount: "1.00" });
    expect(made.location).toBe(`${at}?done=payment`);
    expect((await s.ok("list_payments", { group_id: g.group_id, state: "pending" }, key(bob))).payments).toHaveLength(1);
  });

  test("the payer's pending payment is counted in settle-up (and said so); the same payment again is refused on the page", async () => {
    const { g, alice, bob, key, at } = await flat();
    const payer = await browserOf(g, bob);
    const page = await payer.get(at);
    const button = formAt(page, `${at}/payments`, `Record this payment: you paid ${alice.toUpperCase()} 20.00 EUR`);
    expect((await send(payer, `${at}/payments`, button)).status).toBe(303);
    // the payee's page: no suggestion for bob any more, a note that the pending payment is counted, and Confirm
    const payee = await browserOf(g, alice);
    const seen = await payee.get(at);
    expect(seen.html).not.toContain(`Record that ${bob.toUpperCase()} paid you`);
    expect(seen.html).toContain("The payment waiting for confirmation is counted as if confirmed, so it is not suggested again");
    expect(seen.html).toContain(`aria-label="Confirm the payment of 20.00 from ${bob.toUpperCase()}"`);
    // the same button from a page left open elsewhere (another key): refused, said on the page, nothing recorded
    const stale = await send(payer, `${at}/payments`, { ...button, idempotency_key: crypto.randomUUID() });
    expect(stale.status).toBe(409);
    expect(stale.html).toContain("already has a pending payment of 20.00 EUR");
    // the form, refused as a repeat, asks whether it is a second payment; ticked, it is recorded
    const form = formAt(await payer.get(at), `${at}/payments`, PAYMENT_FORM);
    const twice = await send(payer, `${at}/payments`, { ...form, to: alice, amount: "20.00" });
    expect(twice.status).toBe(409);
    expect(twice.html).toContain("It is a second payment, not the one already waiting");
    const second = await send(payer, `${at}/payments`, { ...formAt(twice, `${at}/payments`, PAYMENT_FORM), second_payment: "1" });
    expect(second.status).toBe(303);
    expect((await s.ok("list_payments", { group_id: g.group_id, state: "pending" }, key(alice))).payments).toHaveLength(2);
  });
});

test("a suggestion of the same amount as a pending payment is a further payment: its button records it", async () => {
  const { g, alice, bob, key, at } = await flat();
  // bob owes alice 40.00; he has paid 20.00 (pending): 20.00 more is suggested, the same amount as the pending one
  await s.ok(
    "add_expense",
    { group_id: g.group_id, description: "Wine", amount: "40.00", split: { mode: "equal", among: [{ handle: alice }, { handle: bob }] } },
    key(alice),
  );
  await s.ok("record_payment", { group_id: g.group_id, to: alice, amount: "20.00" }, key(bob));
  const b = await browserOf(g, bob);
  const button = formAt(await b.get(at), `${at}/payments`, `Record this payment: you paid ${alice.toUpperCase()} 20.00 EUR`);
  expect(button.second_payment).toBe("1");
  expect((await send(b, `${at}/payments`, button)).status).toBe(303);
  expect((await s.ok("list_payments", { group_id: g.group_id, state: "pending" }, key(alice))).payments).toHaveLength(2);
  expect((await s.ok("get_balances", { group_id: g.group_id }, key(alice))).settle_up.filter((t: any) => t.from.handle === bob)).toEqual([]);
});

describe("a form's key survives Back", () => {
  test("add an expense, go back, send it again: one expense; a page opened afresh adds another; changed after Back it is refused", async () => {
    const { g, alice, key } = await flat();
    const b = await browserOf(g, alice);
    const at = `/groups/${g.group_id}/expenses/new`;
    const opened = await b.get(at);
    const typed = { description: "Cinema", amount: "24.00" };
    const first = formAt(opened, at);
    expect((await send(b, at, { ...first, ...typed })).location).toBe(`/groups/${g.group_id}?done=expense`);
    // Back: the page is not kept (no-store), so the browser asks for the same address again; the person sends the form again
    const back = await b.get(opened.url!);
    const resent = formAt(back, at);
    expect((await send(b, at, { ...resent, ...typed })).location).toBe(`/groups/${g.group_id}?done=expense`);
    const cinemas = async () =>
      (await s.ok("list_expenses", { group_id: g.group_id, limit: 100 }, key(alice))).expenses.filter((e: any) => e.description.untrusted_content === "Cinema");
    expect(await cinemas()).toHaveLength(1);
    // the same key, from the page's view id in its address
    expect(opened.url).toMatch(new RegExp(`^${at}\\?view=[A-Za-z0-9_-]+$`));
    expect(back.url).toBe(opened.url);
    expect(resent.idempotency_key).toBe(first.idempotency_key);
    // changed after Back: not done again, and said plainly
    const changed = await send(b, at, { ...resent, ...typed, amount: "25.00" });
    expect(changed.status).toBe(409);
    expect(changed.html).toContain("This form was already sent from this page");
    expect(await cinemas()).toHaveLength(1);
    // the page opened afresh (its link) is a new form: a second cinema is added
    const fresh = await b.get(at);
    expect(fresh.url).not.toBe(opened.url);
    expect(formAt(fresh, at).idempotency_key).not.toBe(first.idempotency_key);
    expect((await send(b, at, { ...formAt(fresh, at), ...typed })).status).toBe(303);
    expect(await cinemas()).toHaveLength(2);
    // an address kept past the hour (a bookmark) opens a new view
    s.clock.advance(HOUR);
    const later = await b.get(opened.url!);
    expect(later.url).not.toBe(opened.url);
    expect(formAt(later, at).idempotency_key).not.toBe(first.idempotency_key);
  });

  test("a payment from the group page, then Back and the same form again: one payment, replayed", async () => {
    const { g, alice, bob, key, at } = await flat();
    const b = await browserOf(g, bob);
    const opened = await b.get(at);
    const form = formAt(opened, `${at}/payments`, PAYMENT_FORM);
    const typed = { to: alice, amount: "7.00" };
    expect((await send(b, `${at}/payments`, { ...form, ...typed })).location).toBe(`${at}?done=payment`);
    const back = formAt(await b.get(opened.url!), `${at}/payments`, PAYMENT_FORM);
    expect((await send(b, `${at}/payments`, { ...back, ...typed })).location).toBe(`${at}?done=payment`);
    expect((await s.ok("list_payments", { group_id: g.group_id }, key(alice))).payments).toHaveLength(1);
    expect(back.idempotency_key).toBe(form.idempotency_key);
  });

  test("a form refused and corrected keeps its key: Back to the page it came from, sent again, is replayed", async () => {
    const { g, alice, key } = await flat();
    const b = await browserOf(g, alice);
    const at = `/groups/${g.group_id}/expenses/new`;
    const opened = await b.get(at);
    const first = formAt(opened, at);
    const refused = await send(b, at, { ...first, description: "Taxi", amount: "1.234" });
    expect(refused.status).toBe(400);
    const corrected = formAt(refused, at);
    expect((await send(b, at, { ...corrected, amount: "12.34" })).status).toBe(303);
    // Back twice, to the page first opened: the same key, replayed
    const back = formAt(await b.get(opened.url!), at);
    expect((await send(b, at, { ...back, description: "Taxi", amount: "12.34" })).status).toBe(303);
    const taxis = (await s.ok("list_expenses", { group_id: g.group_id, limit: 100 }, key(alice))).expenses.filter(
      (e: any) => e.description.untrusted_content === "Taxi",
    );
    expect(taxis).toHaveLength(1);
    expect(corrected.idempotency_key).toBe(first.idempotency_key);
  });
});

describe("an edit conflict is not a dead end", () => {
  test("after someone else's change the form carries the current version, keeps what was typed and says so; saved again it applies", async () => {
    const { g, alice, bob, key } = await flat();
    const expense = (await s.ok("add_expense", { group_id: g.group_id, description: "Lamp", amount: "12.00" }, key(alice))).expense;
    const at = `/groups/${g.group_id}/expenses/${expense.expense_id}`;
    const b = await browserOf(g, alice);
    const form = formAt(await b.get(`${at}/edit`), `${at}/edit`);
    expect(form.expected_version).toBe("1");
    await s.ok("update_expense", { expense_id: expense.expense_id, expected_version: 1, category: "shopping" }, key(bob));
    const conflict = await send(b, `${at}/edit`, { ...form, description: "Desk lamp", amount: "13.00" });
    expect(conflict.status).toBe(409);
    const kept = formAt(conflict, `${at}/edit`);
    expect(kept).toMatchObject({ expected_version: "2", description: "Desk lamp", amount: "13.00" });
    expect(conflict.html).toContain(`Someone else (${bob.toUpperCase()}) changed this expense while you were editing it: it is now version 2`);
    expect(conflict.html).toContain("changed since: the category");
    expect(conflict.html).toContain("Nothing of yours was saved");
    const saved = await send(b, `${at}/edit`, kept);
    expect(saved.location).toBe(`${at}?done=updated`);
    expect((await s.ok("get_expense", { expense_id: expense.expense_id }, key(alice))).expense).toMatchObject({
      version: 3,
      amount: "13.00",
      description: { untrusted_content: "Desk lamp" },
    });
  });

  test("a refusal for another reason keeps the version the form was made from: someone's change is never overwritten unseen", async () => {
    const { g, alice, bob, key } = await flat();
    const expense = (await s.ok("add_expense", { group_id: g.group_id, description: "Rug", amount: "30.00" }, key(alice))).expense;
    const at = `/groups/${g.group_id}/expenses/${expense.expense_id}`;
    const b = await browserOf(g, alice);
    const form = formAt(await b.get(`${at}/edit`), `${at}/edit`);
    await s.ok("update_expense", { expense_id: expense.expense_id, expected_version: 1, amount: "31.00" }, key(bob));
    const refused = await send(b, `${at}/edit`, { ...form, notes: "x".repeat(501) });
    expect(refused.status).toBe(400);
    expect(formAt(refused, `${at}/edit`).expected_version).toBe("1");
  });
});
