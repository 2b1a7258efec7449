// The web pages of federation, through real HTTP with a cookie jar: two svc servers on loopback in allowlist mode
// (child processes, test/federation/servers.ts). A person adds a contact of the other server by code from the
// contacts page, the other side accepts there, and both pages list the contact with its address, marked as on
// another server; the settings page changes what get_me says the agent accepts from other servers; a server that
// does not federate says so and offers no form for it. One short look in Chromium: both pages with federation on pass
// the shared audit (test/web/audit.ts), and the choice is made with a click.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { audit, follow } from "./audit.ts";
import { launchChromium } from "./chromium.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { startServers, until, type FedServer } from "../federation/servers.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let A: FedServer;
let B: FedServer;
let off: TestServer;
let close: () => Promise<void>;
/** Alice's browser on A, signed in by the first test, with Bob of B as her contact. */
let alicePage: PageClient;
let alice: Who;

beforeAll(async () => {
  const started = await startServers(2);
  [A, B] = started.servers as [FedServer, FedServer];
  close = started.close;
  off = await startTestServer();
}, 60_000);
afterAll(async () => {
  await close?.();
  await off?.stop();
});

type Who = { handle: string; key: string };
type Tools = Pick<TestServer, "ok">;

async function browserOf(s: Tools & { url: string }, a: Who): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/account");
  await signInWithCode(s, b, "account", a.handle, a.key);
  return b;
}

/** The fields of a form, found by its button's aria-label or text, as the browser would send them (radios left out). */
function formOf(page: PageResponse, label: string): { action: string; fields: Record<string, string> } {
  const forms = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
  const found = forms.find((f) => f[2]!.includes(`aria-label="${label}"`) || f[2]!.includes(`>${label}</button>`));
  if (!found) throw new Error(`no form with the button "${label}"`);
  const fields = Object.fromEntries(
    [...found[2]!.matchAll(/<input (?:type="hidden" )?(?:id="[^"]*" )?name="([^"]+)"[^>]*? value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]),
  );
  return { action: found[1]!, fields };
}

const send = (b: PageClient, f: { action: string; fields: Record<string, string> }, extra: Record<string, string> = {}) =>
  b.post(f.action, { ...f.fields, ...extra }, f.fields.csrf);

/** The items of a list on the page, by its aria-label. */
const listed = (page: PageResponse, label: string) => page.html.match(new RegExp(`<ul[^>]*aria-label="${label}">([\\s\\S]*?)</ul>`))?.[1] ?? "";

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe("federation on the web pages", () => {
  test("contacts: a code with the other server's host sends the request; the other side accepts on its page; both list the contact with its address", async () => {
    alice = await A.register("alice");
    const bob = await B.register("bob");
    const { code } = await B.ok("get_contact_code", {}, bob.key);
    const bobPage = await browserOf(B, bob);
    // The code is offered with the server's host for people on other servers.
    expect((await bobPage.get("/contacts")).html).toContain(`${code}@${B.host}`);

    alicePage = await browserOf(A, alice);
    const contacts = await alicePage.get("/contacts");
    expect(contacts.html).toContain("Contacts on other servers");
    expect(contacts.html).not.toContain("does not exchange with other svc servers");
    const sent = await send(alicePage, formOf(contacts, "Add by code"), { code: `${code}@${B.host}` });
    expect(sent.status).toBe(303);
    expect(sent.location).toBe("/contacts?done=sent");
    expect((await alicePage.follow(sent)).html).toContain("Request sent to their server");

    // Bob's page shows the request from Alice's alias: her address once, marked as on another server.
    const aliceAddress = `alice@${A.host}`;
    const request = await until(
      () => bobPage.get("/contacts"),
      (p) => listed(p, "Requests to answer").includes(aliceAddress),
    );
    const card = listed(request, "Requests to answer");
    expect(card).toContain(`<strong>ALICE (${aliceAddress})</strong> <span class="badge">on another server</span>`);
    expect(occurrences(card, aliceAddress)).toBe(1);
    const [incoming] = (await B.ok("list_contacts", { state: "incoming" }, bob.key)).contacts;
    expect(incoming.agent.display_name).toBe(`ALICE (${aliceAddress})`);
    const accepted = await send(bobPage, formOf(request, `Accept @${incoming.agent.handle}`));
    expect(accepted.location).toBe("/contacts?done=accepted");
    expect(listed(await bobPage.get("/contacts"), "Contacts")).toContain(`<strong>ALICE (${aliceAddress})</strong>`);

    // Alice's server hears the answer: her page lists Bob under Contacts, with his address, once.
    const bobAddress = `bob@${B.host}`;
    const mine = await until(
      () => alicePage.get("/contacts"),
      (p) => listed(p, "Contacts").includes(bobAddress),
    );
    const list = listed(mine, "Contacts");
    expect(list).toContain(`<strong>BOB (${bobAddress})</strong> <span class="badge">on another server</span>`);
    expect(occurrences(list, bobAddress)).toBe(1);
    const [bobOnA] = (await A.ok("list_contacts", { state: "accepted" }, alice.key)).contacts;
    expect(bobOnA.agent.display_name).toBe(`BOB (${bobAddress})`);
    expect(list).toContain(`aria-label="Block @${bobOnA.agent.handle}"`);
  }, 60_000);

  test("settings: the address for other servers is shown, and the choice of what the agent accepts is update_me's, as get_me says", async () => {
    const carol = await B.register("carol");
    const dave = await A.register("dave");
    const carolPage = await browserOf(B, carol);
    const settings = await carolPage.get("/settings");
    expect(settings.html).toContain(`<strong>carol@${B.host}</strong>`);
    expect(settings.html).toMatch(/id="f-accepts-code" name="accepts_from_other_servers" value="code" checked>/);
    expect((await carolPage.get("/account")).html).toContain(`<strong>carol@${B.host}</strong>`);
    expect((await B.ok("get_me", {}, carol.key)).federation).toEqual({ address: `carol@${B.host}`, accepts_from_other_servers: "code" });

    const save = formOf(settings, "Save what I accept");
    const saved = await send(carolPage, save, { accepts_from_other_servers: "address" });
    expect(saved.location).toBe("/settings?saved=servers");
    // Sent twice (same idempotency key), it is done once and answered the same.
    expect((await send(carolPage, save, { accepts_from_other_servers: "address" })).location).toBe("/settings?saved=servers");
    expect((await B.ok("get_me", {}, carol.key)).federation.accepts_from_other_servers).toBe("address");
    expect((await carolPage.follow(saved)).html).toMatch(/value="address" checked>/);

    const refused = await send(carolPage, formOf(await carolPage.get("/settings"), "Save what I accept"), { accepts_from_other_servers: "everyone" });
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('id="f-accepts-error" class="field-error"');
    expect((await B.ok("get_me", {}, carol.key)).federation.accepts_from_other_servers).toBe("address");

    // Accepting requests by address takes effect: Dave adds Carol by her address from his contacts page, and it reaches her.
    const davePage = await browserOf(A, dave);
    const add = await send(davePage, formOf(await davePage.get("/contacts"), "Send request to another server"), {
      address: `carol@${B.host}`,
      note: "Dave from the climbing club",
    });
    expect(add.location).toBe("/contacts?done=requested");
    // Until her server answers, her name here is her handle: the address is all Dave's server knows.
    const waiting = listed(await davePage.get("/contacts"), "Requests you sent");
    expect(waiting).toContain(`<strong>carol (carol@${B.host})</strong> <span class="badge">on another server</span>`);
    const request = await until(
      () => carolPage.get("/contacts"),
      (p) => listed(p, "Requests to answer").includes(`dave@${A.host}`),
    );
    // The note is quoted as Dave's words, named by his address.
    expect(listed(request, "Requests to answer")).toContain(`<footer>written by dave@${A.host}</footer>`);
  }, 60_000);

  test("a server that does not federate says so on the contacts page, offers no form for it, and hides the settings", async () => {
    const erin = await off.register("erin");
    const page = await browserOf(off, erin);
    const contacts = await page.get("/contacts");
    expect(contacts.html).toContain("This server does not exchange with other svc servers");
    expect(contacts.html).toContain("--federation allowlist");
    expect(contacts.html).not.toContain('name="by" value="address"');
    expect(contacts.html).not.toContain("@host");
    expect((await page.get("/settings")).html).not.toContain("Other svc servers");
    expect((await page.get("/account")).html).not.toContain("On other svc servers");
    expect((await off.ok("get_me", {}, erin.key)).federation).toBeUndefined();
    // A code with another host is refused by add_contact, beside the field.
    const refused = await send(page, formOf(contacts, "Add by code"), { code: "amber-falcon-river-seven@b.example" });
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('id="f-code-error" class="field-error">Names an agent on another server');
  });

  test("in Chromium: the contacts and settings pages with federation on pass the audit; a click on a choice saves it", async () => {
    const browser = await launchChromium();
    try {
      await browser.context.addCookies([...alicePage.cookies].map(([name, value]) => ({ name, value, url: A.url })));
      const page = browser.context.pages()[0] ?? (await browser.context.newPage());
      await page.goto(`${A.url}/contacts`);
      await expect(page.getByRole("list", { name: "Contacts" }).textContent()).resolves.toContain(`bob@${B.host}`);
      await audit(page, "contacts-federation");
      await page.goto(`${A.url}/settings`);
      await audit(page, "settings-federation");
      await page.getByLabel("Nothing: no requests from other servers").check();
      await follow(page, page.getByRole("button", { name: "Save what I accept" }));
      await expect(page.getByRole("status").textContent()).resolves.toContain("Saved");
      expect((await A.ok("get_me", {}, alice.key)).federation.accepts_from_other_servers).toBe("none");
    } finally {
      await browser.close();
    }
  }, 120_000);
});
