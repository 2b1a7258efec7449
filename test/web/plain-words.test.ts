// The pages speak to the person who reads them (server/web/wording.ts), through real HTTP with a cookie jar: names
// before handles, "you owe / you lent" on every expense line, times as <time> elements the page's script shows in
// the reader's zone (UTC without it), counts that agree, refusals a person can act on, inbox items in a person's
// words (no "(quoted)", no "Ask your human", no tool names), answered asks gone from the inbox and the dashboard,
// the dashboard's recent activity while expenses wait, and the count of unseen items in the nav.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, inboxItems, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { launchChromium } from "./chromium.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
}, 60_000);
afterAll(() => s.stop());

async function signedIn(handle: string, key: string, first = "/groups"): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", handle, key);
  await b.get(first);
  return b;
}

/** The page's main text as a person reads it: tags out, entities read back, spaces folded. */
const said = (page: PageResponse) =>
  (page.html.match(/<main[^>]*>([\s\S]*)<\/main>/)?.[1] ?? "")
    .replace(/<[^>]+>/g, " ")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ");

/** A GET of `/` as a browser asks for it (an API client gets JSON there), after its view-id redirect. */
async function dashboard(b: PageClient): Promise<PageResponse> {
  const cookie = [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const get = (at: string) => fetch(`${s.url}${at}`, { headers: { accept: "text/html", cookie }, redirect: "manual" });
  let res = await get("/");
  const to = res.headers.get("location");
  if (res.status === 303 && to) res = await get(to);
  const html = await res.text();
  const csrf = html.match(/name="csrf" value="([^"]+)"/)?.[1];
  if (csrf) b.csrf = csrf;
  return { status: res.status, headers: res.headers, html, location: null };
}

describe("a group's pages in a person's words", () => {
  let g: TestGroup;
  let at: string;
  let alice: PageClient;
  beforeAll(async () => {
    g = await groupWith(s, ["pl-alice", "pl-bob", "pl-carol"], "EUR", "Trip");
    at = `/groups/${g.group_id}`;
    const key = (h: string) => g.by[h]!.key;
    await s.ok("update_me", { display_name: "Alice Liddell" }, key("pl-alice"));
    await s.ok("update_me", { display_name: "Bob" }, key("pl-bob"));
    await s.ok("add_expense", { group_id: g.group_id, description: "Dinner", amount: "60.00" }, key("pl-alice"));
    await s.ok(
      "add_expense",
      {
        group_id: g.group_id,
        description: "Taxi",
        amount: "30.00",
        split: {
          mode: "shares",
          among: [
            { handle: "pl-alice", value: 1 },
            { handle: "pl-bob", value: 2 },
          ],
        },
      },
      key("pl-bob"),
    );
    await s.ok(
      "add_expense",
      { group_id: g.group_id, description: "Museum", amount: "10.00", split: { mode: "equal", among: [{ handle: "pl-bob" }, { handle: "pl-carol" }] } },
      key("pl-bob"),
    );
    alice = await signedIn("pl-alice", key("pl-alice"), at);
  }, 60_000);

  test("the dashboard greets a person by their display name, not their handle", async () => {
    const page = await dashboard(alice);
    expect(page.html).toContain("<h1>Hello, Alice Liddell</h1>");
    expect(page.html).not.toContain("Hello, pl-alice");
  });

  test("every expense line says what it means for the reader: you lent, you owe, or not in it", async () => {
    const page = said(await alice.get(at));
    expect(page).toContain("“Dinner” paid by Alice Liddell · you lent 40.00 EUR");
    expect(page).toContain("“Taxi” paid by Bob · you owe 10.00 EUR");
    expect(page).toContain("“Museum” paid by Bob · you are not in it");
    // The lines of what waits for confirmation say it too, and the expense's own page.
    expect(page).toContain("“Taxi” (30.00 EUR, added by Bob; you owe 10.00 EUR): you have not confirmed it yet");
    const taxi = (await s.ok("list_expenses", { group_id: g.group_id }, g.by["pl-alice"]!.key)).expenses.find(
      (e: any) => e.description.untrusted_content === "Taxi",
    );
    expect(said(await alice.get(`${at}/expenses/${taxi.expense_id}`))).toContain("For you You owe 10.00 EUR");
    // People by name: balances, settle-up, who has not confirmed.
    expect(page).toContain("Bob owes Alice Liddell");
    expect(page).not.toMatch(/\bpl-bob (owes|paid|has)/);
  });

  test("times are <time> elements in UTC, shown in the reader's zone by the page's own script", async () => {
    const expense = (await s.ok("list_expenses", { group_id: g.group_id }, g.by["pl-alice"]!.key)).expenses.find(
      (e: any) => e.description.untrusted_content === "Dinner",
    );
    const page = await alice.get(`${at}/expenses/${expense.expense_id}`);
    expect(page.html).toContain(`<time datetime="${expense.created_at}">2026-11-22 12:00 UTC</time>`);
    expect(page.html).toContain('<script src="/assets/local-time.js" defer></script>');
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const script = await s.raw("/assets/local-time.js");
    expect(script.headers.get("content-type")).toStartWith("text/javascript");
    expect(await script.text()).toContain("toLocaleString");
  });

  test("counts agree with their number: 1 share, 2 shares", async () => {
    const taxi = (await s.ok("list_expenses", { group_id: g.group_id }, g.by["pl-alice"]!.key)).expenses.find(
      (e: any) => e.description.untrusted_content === "Taxi",
    );
    const page = said(await alice.get(`${at}/expenses/${taxi.expense_id}`));
    expect(page).toContain("Alice Liddell: 10.00 EUR (1 share)");
    expect(page).toContain("Bob: 20.00 EUR (2 shares)");
    expect(page).not.toContain("1 shares");
  });

  test("a refused expense says what to change in a person's words: no schema words, paths or tool names", async () => {
    const refused = await alice.post(`${at}/expenses/new`, {
      idempotency_key: crypto.randomUUID(),
      description: "Nobody's",
      amount: "10.00",
      currency: "EUR",
      paid_by: "pl-alice",
      split_mode: "equal",
    });
    expect(refused.status).toBe(400);
    const page = said(refused);
    expect(page).toContain("Choose at least one person to share it");
    for (const word of ["Too small", "expected array", ">=1", "Invalid arguments", "split.among", "add_expense"]) expect(page).not.toContain(word);
    // A value the tool refuses by its own rule keeps the rule, as a sentence.
    const uneven = said(
      await alice.post(`${at}/expenses/new`, {
        idempotency_key: crypto.randomUUID(),
        description: "Uneven",
        amount: "10.00",
        currency: "EUR",
        paid_by: "pl-alice",
        split_mode: "exact",
        "value_pl-alice": "3.00",
        "value_pl-bob": "4.00",
      }),
    );
    expect(uneven).toContain("Some of what you typed needs a change. Split: Exact amounts sum to 7.00 EUR, but the expense is 10.00 EUR.");
  });

  test("the groups page of someone in no group points to the pages, not to a tool", async () => {
    const lone = await s.register("pl-lone");
    const b = await signedIn("pl-lone", lone.key);
    const page = await b.get("/groups");
    expect(page.html).toContain("You are in no group yet.");
    expect(page.html).not.toContain("create_group");
    expect(page.html).not.toContain("Ask your agent");
  });
});

describe("the inbox and the dashboard in a person's words", () => {
  test("items read as sentences for a person: names, you owe, quoted words without (quoted), no agent's instructions", async () => {
    const g = await groupWith(s, ["ib-alice", "ib-bob"], "EUR", "Flat");
    await s.ok("update_me", { display_name: "Bob Builder" }, g.by["ib-bob"]!.key);
    await s.ok("add_expense", { group_id: g.group_id, description: "Groceries <b>", amount: "30.00", notes: "from the market" }, g.by["ib-bob"]!.key);
    await s.ok("record_payment", { group_id: g.group_id, to: "ib-alice", amount: "5.00" }, g.by["ib-bob"]!.key);
    const alice = await signedIn("ib-alice", g.by["ib-alice"]!.key, "/inbox");
    for (const page of [await alice.get("/inbox"), await dashboard(alice)]) {
      const text = said(page);
      expect(text).toContain("Bob Builder added “Groceries <b>” (30.00 EUR) in “Flat”: you owe 15.00 EUR.");
      expect(text).toContain("Bob Builder says they paid you 5.00 EUR in “Flat”. Confirm it once you have the money, or reject it.");
      for (const word of ["(quoted)", "your human", "respond_expense", "respond_payment", "@ib-bob"]) expect(text).not.toContain(word);
    }
    // Another person's note stays a quoted block, naming its writer.
    expect((await alice.get("/inbox")).html).toContain("<blockquote><p>from the market</p><footer>written by Bob Builder</footer></blockquote>");
  });

  test("an accepted contact request and a joined invitation are gone from the inbox and the dashboard", async () => {
    const [ann, ben] = await s.contacts("ac-ann", "ac-ben");
    const cat = await s.register("ac-cat");
    await s.ok("add_contact", { handle: "ac-ann", note: "hello" }, cat.key);
    const { group } = await s.ok("create_group", { name: "Club", currency: "EUR" }, ben.key);
    await s.ok("create_group_invite", { group_id: group.group_id, handle: "ac-ann" }, ben.key);
    const b = await signedIn("ac-ann", ann.key, "/inbox");
    let inbox = said(await b.get("/inbox"));
    expect(inbox).toContain("AC-CAT asks to become your contact.");
    expect(inbox).toContain("AC-BEN invites you to the group “Club” (EUR).");
    // Accepted on the contacts page, joined from the inbox.
    const contacts = await b.get("/contacts");
    const accept = contacts.html.match(/<form method="post" action="\/contacts\/respond"[^>]*>([\s\S]*?)<\/form>/)![1]!;
    const fields = Object.fromEntries([...accept.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
    expect((await b.post("/contacts/respond", fields, fields.csrf)).status).toBe(303);
    const page = await b.get("/inbox");
    const join = [...page.html.matchAll(/<form method="post" action="\/inbox\/group-invite"[^>]*>([\s\S]*?)<\/form>/g)].find((f) =>
      f[1]!.includes('value="accept"'),
    )![1]!;
    const joinFields = Object.fromEntries([...join.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
    expect((await b.post("/inbox/group-invite", joinFields, joinFields.csrf)).status).toBe(303);
    const answered = (await inboxItems(s, ann.key)).filter((i: any) => i.requires_action && i.resolved && i.type !== "auth.join_code");
    expect(answered.map((i: any) => i.type).sort()).toEqual(["contact.request", "group.invitation"]);
    for (const shown of [await b.get("/inbox"), await dashboard(b)]) {
      const text = said(shown);
      expect(text).not.toContain("asks to become your contact");
      expect(text).not.toContain("invites you to the group");
      expect(text).not.toContain("Ask your human before accepting");
    }
    inbox = said(await b.get("/inbox"));
    expect(inbox).toContain("Nothing waits for you.");
  });

  test("while expenses wait for a decision the dashboard's recent activity lists them, not 'Nothing has happened yet'", async () => {
    const g = await groupWith(s, ["ra-alice", "ra-bob"], "EUR", "Boat");
    for (const d of ["Fuel", "Ropes", "Bait"]) await s.ok("add_expense", { group_id: g.group_id, description: d, amount: "10.00" }, g.by["ra-bob"]!.key);
    const alice = await signedIn("ra-alice", g.by["ra-alice"]!.key);
    const page = await dashboard(alice);
    expect(page.html).not.toContain("Nothing has happened yet");
    const recent = page.html.match(/<ul aria-label="Recent activity">([\s\S]*?)<\/ul>/)?.[1] ?? "";
    for (const d of ["Fuel", "Ropes", "Bait"]) expect(recent).toContain(`RA-BOB added “${d}” (10.00 EUR) in “Boat”: you owe 5.00 EUR.`);
    expect(recent).toMatch(/<time datetime="[^"]+">2026-11-22 12:00 UTC<\/time>/);
  });

  test("the nav counts what the person has not seen, and nothing once they marked it seen", async () => {
    const g = await groupWith(s, ["nv-alice", "nv-bob"], "EUR", "Van");
    await s.ok("add_expense", { group_id: g.group_id, description: "Gas", amount: "10.00" }, g.by["nv-bob"]!.key);
    await s.ok("add_expense", { group_id: g.group_id, description: "Tolls", amount: "8.00" }, g.by["nv-bob"]!.key);
    const alice = await signedIn("nv-alice", g.by["nv-alice"]!.key);
    // bob joined, then added two expenses: three items she has not seen (her sign-in code is no item of a page's).
    const unseen = (await inboxItems(s, g.by["nv-alice"]!.key)).filter((i: any) => !i.seen && i.type !== "auth.join_code");
    expect(unseen.map((i: any) => i.type).sort()).toEqual(["group.member_joined", "ledger.expense_added", "ledger.expense_added"]);
    for (const path of ["/groups", `/groups/${g.group_id}`, "/contacts", "/inbox"]) {
      expect((await alice.get(path)).html).toContain('<a href="/inbox">Inbox <span class="badge">3<span class="visually-hidden"> unseen</span></span></a>');
    }
    const inbox = await alice.get("/inbox");
    const mark = inbox.html.match(/<form method="post" action="\/inbox\/seen"[^>]*>([\s\S]*?)<\/form>/)![1]!;
    const fields = Object.fromEntries([...mark.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
    expect((await alice.post("/inbox/seen", fields, fields.csrf)).status).toBe(303);
    expect((await alice.get("/groups")).html).toContain('<a href="/inbox">Inbox</a>');
  });
});

describe("in Chromium", () => {
  test("times read in the browser's own time zone and language", async () => {
    const g = await groupWith(s, ["tz-alice", "tz-bob"], "EUR", "Tokyo trip");
    const { expense } = await s.ok("add_expense", { group_id: g.group_id, description: "Ramen", amount: "10.00" }, g.by["tz-alice"]!.key);
    const b = await signedIn("tz-alice", g.by["tz-alice"]!.key);
    const browser = await launchChromium({ width: 800, height: 900 }, { timezoneId: "Asia/Tokyo", locale: "en-GB" });
    try {
      await browser.context.addCookies([...b.cookies].map(([name, value]) => ({ name, value, url: s.url })));
      const page = browser.context.pages()[0] ?? (await browser.context.newPage());
      await page.goto(`${s.url}/groups/${g.group_id}/expenses/${expense.expense_id}`);
      // 12:00 UTC is 21:00 in Tokyo; the UTC text stays in the title.
      const added = page.locator(`time[datetime="${expense.created_at}"]`).first();
      await expect(added.textContent()).resolves.toBe("22 Nov 2026, 21:00");
      await expect(added.getAttribute("title")).resolves.toBe("2026-11-22 12:00 UTC");
    } finally {
      await browser.close();
    }
  }, 120_000);
});

describe("mail as a person reads it", () => {
  test("paragraphs and lines as written; a link shown by its domain, followable only when nothing about it is off", async () => {
    const ann = await s.register("mw-ann", { display_name: "Ann" });
    const ben = await s.register("mw-ben", { display_name: "Ben" });
    await s.ok("add_contact", { handle: "mw-ben" }, ann.key);
    await s.ok("respond_contact_request", { handle: "mw-ann", action: "accept" }, ben.key);
    const body = [
      "Hi Ben,",
      "",
      "The keys are under the mat.\nThe map: https://maps.example.org/cabin?x=1&y=2.",
      "",
      "Pay here: [https://bank.example.com](https://evil.example.net/login) <b>now</b>",
    ].join("\n");
    const { envelope } = await s.ok("send_envelope", { to: ["mw-ben"], subject: "Cabin", body_md: body }, ann.key);
    const b = await signedIn("mw-ben", ben.key, "/envelopes");
    const page = await b.get(`/envelopes/${envelope.envelope_id}`);
    const quoted = page.html.match(/<blockquote>([\s\S]*?)<\/blockquote>/)![1]!;
    const paragraphs = [...quoted.matchAll(/<p>([\s\S]*?)<\/p>/g)].map((m) => m[1]!);
    expect(paragraphs).toHaveLength(3);
    expect(paragraphs[0]).toBe("Hi Ben,");
    // A link nothing is wrong with: its text is the domain it leads to.
    expect(paragraphs[1]).toBe(
      'The keys are under the mat.<br>The map: <a href="https://maps.example.org/cabin?x=1&amp;y=2" rel="nofollow noopener noreferrer">maps.example.org</a>.',
    );
    // Text that shows another domain than the link's: not followable, where it leads said beside it; markup stays text.
    expect(paragraphs[2]).toBe('Pay here: https://bank.example.com <span class="muted">(leads to evil.example.net)</span> &lt;b&gt;now&lt;/b&gt;');
    expect(quoted).toContain("written by Ann");
  });
});
