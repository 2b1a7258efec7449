// No page a person sees speaks to an agent: a walk of every page a signed-in person can reach by links on a
// populated server (groups with a placeholder, expenses of each split mode, a refund, another currency, a recurring
// one, payments pending, confirmed, rejected and voided, contacts in each state, inbox items of each type, mail,
// plans), and the pages of refused forms, finds no tool name (any name in server/tools/catalogue.ts), no "your
// human" and no agents' "(quoted)" mark. The documentation (/docs) is for the people who write agents, and is left
// out of the walk.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
let alice: Agent;
let bob: Agent;
let trip: string;
let club: string;
let dana: string;
const ids: Record<string, string> = {};

const TOOL_WORDS = new RegExp(`\\b(${TOOLS.map((t) => t.name).join("|")})\\b`, "g");

/** What on a page speaks to an agent: tool names, "your human", the agents' "(quoted)" mark. */
function agentWords(html: string): string[] {
  const page = html.replace(/<style>[\s\S]*?<\/style>/g, "");
  return [...(page.match(TOOL_WORDS) ?? []), ...(page.match(/your human/gi) ?? []), ...(page.match(/\(quoted\)/g) ?? [])];
}

/** Registers one agent with a display name. */
const person = (handle: string, name: string) => s.register(handle, { display_name: name });

beforeAll(async () => {
  s = await startTestServer();
  alice = await person("wk-alice", "Alice");
  bob = await person("wk-bob", "Bob");
  const carol = await person("wk-carol", "Carol");
  await person("wk-dave", "Dave");
  const eve = await person("wk-eve", "Eve");
  const fay = await person("wk-fay", "Fay");
  const ok = (tool: string, args: Record<string, unknown>, who: Agent) => s.ok(tool, args, who.key);

  // Contacts in each state: bob accepted, carol asking (incoming), dave asked (outgoing), eve blocked, fay accepted
  // alice's request (contact.accepted).
  await ok("add_contact", { handle: "wk-bob" }, alice);
  await ok("respond_contact_request", { handle: "wk-alice", action: "accept" }, bob);
  await ok("add_contact", { handle: "wk-alice", note: "We met at the <b>climbing</b> wall" }, carol);
  await ok("add_contact", { handle: "wk-dave" }, alice);
  await ok("add_contact", { handle: "wk-alice" }, eve);
  await ok("block_contact", { handle: "wk-eve" }, alice);
  await ok("add_contact", { handle: "wk-fay" }, alice);
  await ok("respond_contact_request", { handle: "wk-alice", action: "accept" }, fay);

  // Trip: alice's group, bob invited and joined (member_joined), Dana a friend without an account.
  trip = (await ok("create_group", { name: "Trip", currency: "EUR" }, alice)).group.group_id;
  const invite = (await ok("create_group_invite", { group_id: trip, handle: "wk-bob" }, alice)).invite;
  await ok("respond_group_invite", { invite_id: invite.invite_id, action: "accept" }, bob);
  dana = (await ok("create_group_invite", { group_id: trip, name: "Dana" }, alice)).invite.placeholder.member_id;
  const all = [{ handle: "wk-alice" }, { handle: "wk-bob" }, { member_id: dana }];
  const add = async (name: string, by: Agent, args: Record<string, unknown>) => {
    ids[name] = (await ok("add_expense", { group_id: trip, description: name, ...args }, by)).expense.expense_id;
  };
  await add("Rent", bob, { amount: "90.00", split: { mode: "equal", among: all }, notes: "For *October*" });
  await add("Power", bob, {
    amount: "30.00",
    split: {
      mode: "exact",
      among: [
        { handle: "wk-alice", value: "10.00" },
        { handle: "wk-bob", value: "20.00" },
      ],
    },
  });
  await add("Water", alice, {
    amount: "20.00",
    split: {
      mode: "percent",
      among: [
        { handle: "wk-alice", value: "50" },
        { handle: "wk-bob", value: "50" },
      ],
    },
  });
  await add("Food", bob, {
    amount: "30.00",
    split: {
      mode: "shares",
      among: [
        { handle: "wk-alice", value: 1 },
        { handle: "wk-bob", value: 2 },
      ],
    },
  });
  await add("Boat", bob, { amount: "40.00", split: { mode: "adjustment", among: [{ handle: "wk-alice", value: "5.00" }, { handle: "wk-bob" }] } });
  await add("Deposit back", bob, { kind: "refund", amount: "20.00" });
  await add("Taxi", alice, { amount: "10.00", currency: "USD", exchange_rate: "0.9" });
  await add("Internet", alice, { amount: "25.00", repeat: "monthly" });
  await add("Wrong", bob, { amount: "5.00" });
  await ok("update_expense", { expense_id: ids.Power, expected_version: 1, category: "utilities" }, bob);
  await ok("delete_expense", { expense_id: ids.Wrong }, bob);
  await ok("respond_expense", { expense_id: ids.Water, action: "dispute", reason: "We had no water" }, bob);
  // Payments: pending to alice, confirmed, rejected and voided ones, and one Dana paid in cash.
  await ok("record_payment", { group_id: trip, to: "wk-alice", amount: "4.00" }, bob);
  const confirmed = (await ok("record_payment", { group_id: trip, to: "wk-bob", amount: "3.00" }, alice)).payment;
  await ok("respond_payment", { payment_id: confirmed.payment_id, action: "confirm" }, bob);
  const rejected = (await ok("record_payment", { group_id: trip, to: "wk-bob", amount: "2.00", note: "cash" }, alice)).payment;
  await ok("respond_payment", { payment_id: rejected.payment_id, action: "reject" }, bob);
  const voided = (await ok("record_payment", { group_id: trip, to: "wk-alice", amount: "1.00", second_payment: true }, bob)).payment;
  await ok("respond_payment", { payment_id: voided.payment_id, action: "confirm" }, alice);
  await ok("respond_payment", { payment_id: voided.payment_id, action: "void" }, bob);
  await ok("record_payment", { group_id: trip, from_member_id: dana, to: "wk-alice", amount: "6.00" }, alice);

  // Club: bob's group, alice invited and not answered yet.
  club = (await ok("create_group", { name: "Club", currency: "CHF" }, bob)).group.group_id;
  await ok("create_group_invite", { group_id: club, handle: "wk-alice" }, bob);
  // Ski: bob's group with a friend "Al", whose place alice takes over with the claim link (placeholder_claimed).
  const ski = (await ok("create_group", { name: "Ski", currency: "EUR" }, bob)).group.group_id;
  const al = (await ok("create_group_invite", { group_id: ski, name: "Al" }, bob)).invite;
  await ok(
    "add_expense",
    { group_id: ski, description: "Lift", amount: "50.00", split: { mode: "equal", among: [{ handle: "wk-bob" }, { member_id: al.placeholder.member_id }] } },
    bob,
  );
  await ok("join_group", { invite_code: al.code }, alice);

  // Mail both ways, one with a link.
  await ok("send_envelope", { to: ["wk-alice"], subject: "Keys <i>", body_md: "The key is under the mat: https://example.org/map" }, bob);
  await ok("send_envelope", { to: ["wk-bob"], subject: "Thanks", body_md: "Got them." }, alice);

  // Plans: invited (open), an answer to alice's plan, a time chosen, one cancelled.
  const options = [{ starts_at: "2026-12-04T19:00:00Z", place: "Tasca" }, { starts_at: "2026-12-05T19:00:00Z" }];
  await ok("create_plan", { title: "Dinner", description: "Bring *wine*", options, invitees: ["wk-alice"], respond_by: "2026-12-01T12:00:00Z" }, bob);
  const mine = (await ok("create_plan", { title: "Hike", options, invitees: ["wk-bob"] }, alice)).plan;
  await ok("respond_plan", { plan_id: mine.plan_id, response: "yes", option_ids: [mine.options[0].option_id] }, bob);
  const chosen = (await ok("create_plan", { title: "Film", options, invitees: ["wk-alice"] }, bob)).plan;
  await ok("update_plan", { plan_id: chosen.plan_id, choose_option_id: chosen.options[1].option_id }, bob);
  const off = (await ok("create_plan", { title: "Picnic", options, invitees: ["wk-alice"] }, bob)).plan;
  await ok("cancel_plan", { plan_id: off.plan_id }, bob);
}, 120_000);
afterAll(() => s.stop());

/** Alice's browser, signed in. */
async function aliceBrowser(): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", "wk-alice", alice.key);
  return b;
}

/** `/` as a browser asks for it (an API client gets JSON there): the dashboard of a signed-in person. */
async function home(b: PageClient): Promise<PageResponse> {
  const cookie = [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const get = (at: string) => fetch(`${s.url}${at}`, { headers: { accept: "text/html", cookie }, redirect: "manual" });
  let res = await get("/");
  if (res.status === 303 && res.headers.get("location")) res = await get(res.headers.get("location")!);
  return { status: res.status, headers: res.headers, html: await res.text(), location: null };
}

/** Links of a page to other pages of this server a person reads (not the docs, scripts, files or sign-in steps). */
function links(html: string): string[] {
  return [...html.matchAll(/href="(\/[^"#]*)/g)]
    .map((m) => m[1]!.replaceAll("&amp;", "&"))
    .filter((href) => !/^\/(docs|assets|\.well-known|oauth|account\/oidc|attachments|settings\/link)(\/|$|\?)/.test(href) && !href.includes(".csv"));
}

/** An address without its view id (form-keys.ts), which every page visit adds anew. */
const withoutView = (href: string) => {
  const url = new URL(href, "http://x");
  url.searchParams.delete("view");
  return `${url.pathname}${url.search}`;
};

describe("no page a person sees speaks to an agent", () => {
  test("the walk of every page reachable by links from the dashboard", async () => {
    const b = await aliceBrowser();
    // A key made on the account page: the inbox then tells of a new app connected.
    await b.get("/account");
    expect((await b.post("/account/keys", { name: "Walk key" })).status).toBe(200);
    const seen = new Map<string, string[]>();
    const dashboard = await home(b);
    expect(dashboard.status).toBe(200);
    seen.set("/", agentWords(dashboard.html));
    const queue = [...links(dashboard.html), `/groups/${trip}`, `/groups/${club}`, "/account", "/settings", "/inbox", "/contacts", "/envelopes", "/plans"];
    while (queue.length && seen.size < 250) {
      const href = withoutView(queue.shift()!);
      if (seen.has(href)) continue;
      const page = await b.get(href);
      // The group Alice was only invited to is not hers to see: the 404 page, like any unknown address.
      expect(page.status === 200 || (page.status === 404 && href.startsWith(`/groups/${club}`))).toBe(true);
      // A download (the account's export, a JSON file of its data) is a file, not a page a person reads.
      if (page.headers.get("content-disposition")?.startsWith("attachment")) continue;
      seen.set(href, agentWords(page.html));
      queue.push(...links(page.html));
    }
    const offending = [...seen].filter(([, words]) => words.length);
    expect(offending).toEqual([]);
    // The walk reached every kind of page: each group's page and activity, each expense, mail, plans, the inbox.
    const paths = [...seen.keys()];
    for (const expected of [
      `/groups/${trip}`,
      `/groups/${trip}/activity`,
      `/groups/${trip}/expenses/${ids.Boat}`,
      `/groups/${trip}/expenses/${ids.Rent}/edit`,
      "/inbox",
      "/contacts",
      "/plans",
      "/envelopes",
      "/account",
    ])
      expect(paths).toContain(expected);
    expect(paths.filter((p) => p.startsWith("/envelopes/")).length).toBe(2);
    expect(paths.filter((p) => p.startsWith("/plans/")).length).toBeGreaterThanOrEqual(3);
    expect(dashboard.html).toContain("<h1>Hello, Alice</h1>");
  }, 120_000);

  test("the pages of refused forms", async () => {
    const b = await aliceBrowser();
    const at = `/groups/${trip}`;
    await b.get(at);
    const plan = (await s.ok("list_plans", {}, alice.key)).plans.find((p: any) => p.title.untrusted_content === "Dinner");
    const rent = (await s.ok("get_expense", { expense_id: ids.Rent }, alice.key)).expense;
    const post = (path: string, fields: Record<string, string>) => b.post(path, { idempotency_key: crypto.randomUUID(), ...fields });
    const expense = { description: "Snacks", amount: "12.00", currency: "EUR", paid_by: "wk-alice", split_mode: "equal", "in_wk-alice": "1" };
    const refused: [string, PageResponse][] = [
      ["nobody in the split", await post(`${at}/expenses/new`, Object.fromEntries(Object.entries(expense).filter(([k]) => k !== "in_wk-alice")))],
      ["an amount that is none", await post(`${at}/expenses/new`, { ...expense, amount: "twelve" })],
      ["a currency without a rate", await post(`${at}/expenses/new`, { ...expense, currency: "USD" })],
      ["exact amounts that do not add up", await post(`${at}/expenses/new`, { ...expense, split_mode: "exact", "value_wk-alice": "1.00" })],
      ["a payment between two others", await post(`${at}/payments`, { form: "payment", from: "wk-bob", to: dana, amount: "1.00" })],
      ["a payment of no amount", await post(`${at}/payments`, { form: "payment", from: "wk-alice", to: "wk-bob", amount: "-1" })],
      ["the same payment twice", await post(`${at}/payments`, { form: "payment", from: "wk-alice", to: "wk-bob", amount: "9.00" })],
      ["a dispute without a reason", await post(`${at}/expenses/${ids.Rent}/respond`, { action: "dispute", reason: "" })],
      ["an edit of an old version", await post(`${at}/expenses/${ids.Rent}/edit`, { ...expense, expected_version: String(rent.version - 1 || 99) })],
      ["a payment to confirm that is not", await post(`${at}/payments/respond`, { payment_id: crypto.randomUUID(), action: "confirm" })],
      ["a new group in no currency", await post("/groups/new", { name: "Boat", currency: "EURO" })],
      ["an invitation to a stranger", await post(`${at}/settings/invite`, { handle: "wk-carol" })],
      ["a rename to nothing", await post(`${at}/settings/rename`, { name: "" })],
      ["a friend without a name", await post(`${at}/placeholders`, { form: "placeholder", name: "" })],
      ["a contact by a handle that is none", await post("/contacts/add", { by: "handle", handle: "No Such!" })],
      ["a contact nobody has", await post("/contacts/add", { by: "handle", handle: "wk-nobody" })],
      ["a contact code that is none", await post("/contacts/add", { by: "code", code: "not-a-code" })],
      ["mail to a stranger", await post("/envelopes/send", { to: "wk-carol", subject: "Hi", body_md: "Hello" })],
      ["mail without a subject", await post("/envelopes/send", { to: "wk-bob", subject: "", body_md: "Hello" })],
      ["a plan answered with nothing", await post(`/plans/${plan.plan_id}/respond`, {})],
      ["an invitation answered twice", await post("/inbox/group-invite", { invite_id: crypto.randomUUID(), action: "accept" })],
      ["paying across groups a friend owed nothing", await post("/payments/across", { to: "wk-fay", currency: "EUR" })],
    ];
    // The payment above was recorded once; the same again is refused as a payment recorded twice.
    refused.push(["the same payment recorded twice", await post(`${at}/payments`, { form: "payment", from: "wk-alice", to: "wk-bob", amount: "9.00" })]);
    const shown = refused.map(([what, page]) => ({
      what,
      status: page.status,
      words: agentWords(page.html),
      said: page.html.match(/role="alert">([^<]*)/)?.[1] ?? "",
    }));
    // Each was refused (a 303 is a form that was done: only the first "same payment" is).
    expect(shown.filter((r) => r.status < 400 && r.what !== "the same payment twice")).toEqual([]);
    expect(shown.filter((r) => r.words.length)).toEqual([]);
    // And each says something: no refusal without words.
    expect(shown.filter((r) => r.status >= 400 && r.status !== 404 && !r.said.trim())).toEqual([]);
  }, 120_000);
});
