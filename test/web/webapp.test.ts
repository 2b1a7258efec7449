// The web app beyond a group's page, through real HTTP with a cookie jar: the dashboard shows what get_balances and
// the inbox say; each form (new group, rename, archive, invite, contacts, inbox) is one tool call through invoke(),
// done once when sent twice, and a refused one comes back with the tool's issue beside its field.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { counterpartySentence } from "../../server/contract/ledger-wording.ts";
import type { Agent, TestServer } from "../harness.ts";
import { startTestServer } from "../harness.ts";
import { groupOf, inboxItems } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
let alice: Agent;
let bob: Agent;
let group_id: string;
beforeAll(async () => {
  s = await startTestServer();
  alice = await s.register("wa-alice");
  bob = await s.register("wa-bob");
  group_id = (await groupOf(s, [alice, bob], "EUR", "Flat")).group_id;
  await s.ok("add_expense", { group_id, description: "Groceries", amount: "40.00" }, alice.key);
}, 60_000);
afterAll(() => s.stop());

async function browserOf(a: Agent): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", a.handle, a.key);
  return b;
}

/** The fields of a form, found by its button's aria-label or text, as the browser would send them. */
function formOf(page: PageResponse, label: string): { action: string; fields: Record<string, string> } {
  const forms = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
  const found = forms.find((f) => f[2]!.includes(`aria-label="${label}"`) || f[2]!.includes(`>${label}</button>`));
  if (!found) throw new Error(`no form with the button "${label}"`);
  const fields = Object.fromEntries(
    [...found[2]!.matchAll(/<input (?:type="hidden" )?(?:id="[^"]*" )?name="([^"]+)"[^>]*? value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]),
  );
  return { action: found[1]!, fields };
}

/** A GET as a browser sends it (asking for HTML): `/` answers API clients with JSON. */
async function asBrowser(b: PageClient, path: string) {
  const cookie = [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const get = (at: string) => fetch(`${s.url}${at}`, { headers: { accept: "text/html", ...(cookie ? { cookie } : {}) }, redirect: "manual" });
  let res = await get(path);
  // A page with forms is first redirected to its address with a view id (server/web/form-keys.ts), as PageClient.get follows.
  const to = res.headers.get("location");
  if (res.status === 303 && to?.startsWith(`${path}?view=`)) res = await get(to);
  return { status: res.status, html: await res.text() };
}

const send = (b: PageClient, f: { action: string; fields: Record<string, string> }, extra: Record<string, string> = {}) =>
  b.post(f.action, { ...f.fields, ...extra }, f.fields.csrf);

describe("the web app acts through the tools", () => {
  test("the dashboard shows get_balances' totals and people, and what waits for a decision with where to act", async () => {
    const b = await browserOf(bob);
    const page = await asBrowser(b, "/");
    expect(page.status).toBe(200);
    const balances = await s.ok("get_balances", {}, bob.key);
    expect(balances.counterparties.length).toBe(1);
    // Each person by their display name.
    for (const p of balances.counterparties) expect(page.html).toContain(`<li>${counterpartySentence(p, (r) => r.display_name ?? r.handle)} `);
    expect(balances.totals[0].balance).toBe("-20.00 EUR");
    expect(page.html).toContain("You owe <strong>20.00 EUR</strong> in total");
    expect(page.html).toContain(`href="/groups/${group_id}">Decide</a>`);
    // Without a session, `/` stays the public home page.
    expect((await asBrowser(new PageClient(s.url), "/")).html).toContain("Connect an AI agent");
  });

  test("New group: sent twice, one group and a 303 to it; a bad currency comes back beside its field", async () => {
    const b = await browserOf(alice);
    const f = formOf(await b.get("/groups/new"), "Create group");
    const first = await send(b, f, { name: "Cabin", currency: "nok" });
    expect(first.status).toBe(303);
    expect((await send(b, f, { name: "Cabin", currency: "nok" })).location).toBe(first.location);
    const cabins = (await s.ok("list_groups", {}, alice.key)).groups.filter((g: any) => g.name === "Cabin");
    expect(cabins).toHaveLength(1);
    expect(first.location).toBe(`/groups/${cabins[0].group_id}`);
    const g2 = formOf(await b.get("/groups/new"), "Create group");
    const refused = await send(b, g2, { name: "Boat", currency: "EURO" });
    expect(refused.status).toBe(400);
    expect(refused.html).toMatch(/id="f-currency"[^>]*aria-invalid="true"/);
    expect(refused.html).toContain('id="f-currency-error" class="field-error">Must be an ISO 4217');
    expect(refused.html).toContain('value="Boat"');
  });

  test("contacts: the code is shown; a request by handle (sent twice, once) is accepted; a block sticks; a bad handle is named", async () => {
    const carol = await s.register("wa-carol");
    const dave = await s.register("wa-dave");
    const c = await browserOf(carol);
    let page = await c.get("/contacts");
    expect(page.html).toContain((await s.ok("get_contact_code", {}, carol.key)).code);

    const d = await browserOf(dave);
    const add = formOf(await d.get("/contacts"), "Send contact request");
    expect((await send(d, add, { handle: "wa-carol", note: "<b>It's Dave</b>" })).location).toBe("/contacts?done=requested");
    expect((await send(d, add, { handle: "wa-carol", note: "<b>It's Dave</b>" })).status).toBe(303);
    expect((await inboxItems(s, carol.key, "contact.request")).length).toBe(1);

    page = await c.get("/contacts");
    expect(page.html).toContain("<blockquote><p>&lt;b&gt;It&#39;s Dave&lt;/b&gt;</p><footer>written by WA-DAVE (@wa-dave)</footer></blockquote>");
    await send(c, formOf(page, "Accept WA-DAVE (@wa-dave)"));
    expect((await s.ok("list_contacts", {}, carol.key)).contacts.map((x: any) => x.agent.handle)).toEqual(["wa-dave"]);

    const bad = await send(d, formOf(await d.get("/contacts"), "Send contact request"), { handle: "No Such!" });
    expect(bad.status).toBe(400);
    expect(bad.html).toContain('id="f-handle-error"');

    await send(c, formOf(await c.get("/contacts"), "Block WA-DAVE (@wa-dave)"));
    expect((await s.ok("list_contacts", { state: "blocked" }, carol.key)).contacts.map((x: any) => x.agent.handle)).toEqual(["wa-dave"]);
  });

  test("group settings: rename, invite a contact who joins from the inbox, archive; the inbox page marks nothing until asked", async () => {
    const [erin, frank] = await s.contacts("wa-erin", "wa-frank");
    const { group } = await s.ok("create_group", { name: "Trip", currency: "EUR" }, erin.key);
    const e = await browserOf(erin);
    const at = `/groups/${group.group_id}/settings`;
    let page = await e.get(at);
    expect((await send(e, formOf(page, "Rename"), { name: "Road trip" })).location).toBe(`${at}?done=renamed`);
    expect((await s.ok("get_group", { group_id: group.group_id }, erin.key)).group.name).toBe("Road trip");
    const empty = await send(e, formOf(await e.get(at), "Rename"), { name: "" });
    expect(empty.status).toBe(400);
    expect(empty.html).toContain('id="f-name-error"');

    expect((await send(e, formOf(await e.get(at), "Send invitation"), { handle: "wa-frank" })).location).toBe(`${at}?done=invited`);
    const f = await browserOf(frank);
    page = await f.get("/inbox");
    // Reading the page marks nothing: the agents' inbox still has the invitation unseen.
    expect((await inboxItems(s, frank.key, "group.invitation"))[0].seen).toBe(false);
    const join = formOf(page, "Join the group WA-ERIN invited you to");
    const joined = await send(f, join);
    expect(joined.location).toBe(`/groups/${group.group_id}`);
    expect((await send(f, join)).location).toBe(`/groups/${group.group_id}`);
    expect((await s.ok("get_group", { group_id: group.group_id }, frank.key)).group.member_count).toBe(2);

    // The invitation, answered, is no longer listed (nothing is left to do), and the page still marked nothing.
    const after = await f.get("/inbox");
    expect(after.html).not.toContain("invites you to the group");
    expect(after.html).not.toContain("as seen</button>");
    expect((await inboxItems(s, frank.key, "group.invitation"))[0]).toMatchObject({ seen: false, resolved: true });

    page = await e.get(at);
    expect((await send(e, formOf(page, "Archive the group"))).location).toBe(`${at}?done=archived`);
    expect((await s.ok("get_group", { group_id: group.group_id }, erin.key)).group.archived).toBe(true);
    // Someone not in the group gets the 404 page.
    expect((await (await browserOf(alice)).get(at)).status).toBe(404);
  });

  test("plans: an invitation links to the plan, whose answer (sent twice, once) is respond_plan's; an answer left out is named", async () => {
    const [gina, hal] = await s.contacts("wa-gina", "wa-hal");
    const { plan } = await s.ok(
      "create_plan",
      {
        title: "Dinner <i>Friday</i>",
        options: [{ starts_at: "2026-12-04T19:00:00Z", place: "Tasca" }, { starts_at: "2026-12-05T19:00:00Z" }],
        invitees: ["wa-hal"],
      },
      gina.key,
    );
    const h = await browserOf(hal);
    expect((await h.get("/inbox")).html).toContain(`href="/plans/${plan.plan_id}">Answer it on its page</a>`);
    expect((await h.get("/plans")).html).toContain(`<a href="/plans/${plan.plan_id}">Dinner &lt;i&gt;Friday&lt;/i&gt;</a>`);
    const at = `/plans/${plan.plan_id}`;
    let page = await h.get(at);
    expect(page.html).toContain("<blockquote><p>Dinner &lt;i&gt;Friday&lt;/i&gt;</p><footer>written by WA-GINA, the organiser</footer></blockquote>");
    const none = await send(h, formOf(page, "Send my answer"));
    expect(none.status).toBe(400);
    expect(none.html).toContain('class="field-error"');
    page = await h.get(at);
    const answer = formOf(page, "Send my answer");
    const option = plan.options[0].option_id;
    expect((await send(h, answer, { response: "maybe", option_id: option })).location).toBe(`${at}?done=answered`);
    expect((await send(h, answer, { response: "maybe", option_id: option })).status).toBe(303);
    const seen = (await s.ok("get_plan", { plan_id: plan.plan_id }, gina.key)).plan.invitees[0];
    expect(seen).toMatchObject({ response: "maybe", option_ids: [option] });
    expect((await inboxItems(s, gina.key, "plan.response")).length).toBe(1);
  });
});
