// A handle made twice: two handles whose logins at the real in-process OpenID Connect provider share a verified
// e-mail are joined on /account, through the real pages (cookies, CSRF tokens, a confirmation step).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { REGISTRATION_CLIENT } from "../../server/tools/identity/register-agent.ts";
import type { Agent, TestServer } from "../harness.ts";
import { PageClient, inboxCode, signInWithCode } from "../web/page-client.ts";
import { REDIRECT, approve, authorizePath, grant, pkce, registerClient, tokenCall } from "./oauth-helpers.ts";
import { startServerWithProvider, type EmailClaims, type ServerWithProvider } from "./oidc-helpers.ts";

/** Logins share the e-mail named by their first word ("kim-a" and "kim-b": kim@example.org); "unverified-x" is not verified. */
const accounts = (login: string): EmailClaims =>
  login.startsWith("unverified-")
    ? { email: `${login.slice("unverified-".length)}@example.org`, email_verified: false }
    : { email: `${login.split("-")[0]}@example.org`, email_verified: true };

let world: ServerWithProvider;
let s: TestServer;
beforeAll(async () => {
  world = await startServerWithProvider(accounts);
  s = world.s;
});
afterAll(() => world.stop());

/**
 * Registers `handle` and links the provider login `login` to it: the browser signs in at the provider, then proves the
 * handle with a code from its inbox. The browser is left signed in, with the provider's proof of the e-mail.
 */
async function linkedHandle(handle: string, login: string): Promise<{ agent: Agent; b: PageClient }> {
  const agent = await s.register(handle);
  const b = new PageClient(s.url);
  await b.get("/account");
  await world.providerSignIn(b, "/account/oidc/start?flow=account", login);
  const page = await signInWithCode(s, b, "account", handle, agent.key);
  expect(page.html).toContain(`Signed in as <strong>@${handle}</strong>`);
  return { agent, b };
}

const mergePath = (keep: string, retire: string) => `/account/merge?keep=${keep}&retire=${retire}`;
const handleOf = async (key: string) => (await s.ok("get_me", {}, key)).agent.handle;

describe("joining a handle made twice", () => {
  test("signed in as the second handle: its keys and OAuth sessions act as the first from then on, and it is retired", async () => {
    const main = await linkedHandle("kim-main", "kim-a");
    const dup = await linkedHandle("kim-dup", "kim-b");
    const friend = await s.register("kim-friend");
    await s.ok("add_contact", { handle: "kim-main" }, friend.key);
    const pal = await s.register("kim-pal");
    await s.ok("add_contact", { handle: "kim-pal" }, dup.agent.key);
    await s.ok("respond_contact_request", { handle: "kim-dup", action: "accept" }, pal.key);
    // kim-dup's key reads its own inbox, so its read cursor is past the request kim-main got earlier
    await s.ok("get_inbox", {}, dup.agent.key);
    const phone = (await dup.b.post("/account/keys", { name: "Phone" })).html.match(/id="new-key">(svc_[\w-]+)</)![1]!;
    const oauth = await grant(s, new PageClient(s.url), dup.agent);
    const elsewhere = new PageClient(s.url);
    await elsewhere.get("/account");
    await signInWithCode(s, elsewhere, "account", "kim-dup", dup.agent.key);
    // ways in that were open for kim-dup: an approved join whose app has not polled yet, an unexchanged
    // authorization code, an unused settings link
    const join = await s.ok("join_network", { client_name: "Tablet" });
    const joiner = new PageClient(s.url);
    await joiner.get("/join");
    await joiner.post("/join", { user_code: join.user_code });
    await signInWithCode(s, joiner, "join", "kim-dup", dup.agent.key);
    expect((await joiner.post("/join/approve", {})).status).toBe(303);
    const unexchanged = (await registerClient(s)).body;
    const codePkce = pkce();
    const codeBack = await approve(s, dup.b, authorizePath({ client_id: unexchanged.client_id, code_challenge: codePkce.challenge }), dup.agent);
    const settingsLink = await s.ok("get_settings_link", {}, dup.agent.key);
    const contactCode = (await s.ok("get_contact_code", {}, dup.agent.key)).code;
    const waiting = new PageClient(s.url);
    await waiting.get("/account");
    await waiting.post("/account/signin/code", { handle: "kim-dup", flow: "account" });
    const waitingCode = await inboxCode(s, dup.agent.key);

    const account = await dup.b.get("/account");
    expect(account.html).toContain("also verified on <strong>@kim-main</strong>");
    expect(account.html).toContain(`href="${mergePath("kim-main", "kim-dup").replace("&", "&amp;")}"`);
    expect(account.html).toContain(`href="${mergePath("kim-dup", "kim-main").replace("&", "&amp;")}"`);

    const confirm = await dup.b.get(mergePath("kim-main", "kim-dup"));
    expect(confirm.status).toBe(200);
    expect(confirm.html).toContain("<h1>Join @kim-dup into @kim-main</h1>");
    expect(confirm.html).toContain("You keep <strong>@kim-main</strong>");
    for (const name of [REGISTRATION_CLIENT, "Phone", "Test Client"]) expect(confirm.html).toContain(name);
    expect(confirm.html).toContain("<strong>@kim-pal</strong> end");
    expect(confirm.html).toContain(">Join @kim-dup into @kim-main</button>");
    // nothing happened yet
    expect(await handleOf(dup.agent.key)).toBe("kim-dup");

    const done = await dup.b.post("/account/merge", { keep: "kim-main", retire: "kim-dup" });
    expect(done.status).toBe(200);
    expect(done.html).toContain("@kim-dup is joined into @kim-main: 3 apps now act as @kim-main, and @kim-dup is retired.");
    expect(done.html).toContain("Signed in as <strong>@kim-main</strong>");
    expect(done.html).not.toContain("also verified on");

    // every client of kim-dup now acts as kim-main
    expect(await handleOf(dup.agent.key)).toBe("kim-main");
    expect(await handleOf(phone)).toBe("kim-main");
    const listed = (await s.ok("list_clients", {}, main.agent.key)).clients.map((c: any) => c.name);
    expect(listed).toEqual(expect.arrayContaining(["Phone", "Test Client"]));
    // the moved key reads kim-main's inbox from its start
    const inbox = await s.ok("get_inbox", {}, dup.agent.key);
    expect(inbox.items.map((i: any) => i.type)).toContain("contact.request");
    // an access token names kim-dup as its subject, so it stops; the session's next refresh acts as kim-main
    expect((await s.call("get_me", {}, oauth.tokens.access_token)).status).toBe(401);
    const refreshed = await tokenCall(s, { grant_type: "refresh_token", refresh_token: oauth.tokens.refresh_token, client_id: oauth.client.client_id });
    expect(refreshed.status).toBe(200);
    expect(await handleOf(refreshed.body.access_token)).toBe("kim-main");

    // the approved join connects its app to kim-main; the code and the settings link no longer work
    const joined = await s.ok("finish_join", { poll_token: join.poll_token });
    expect(joined.agent.handle).toBe("kim-main");
    expect(await handleOf(joined.api_key)).toBe("kim-main");
    const lateCode = await tokenCall(s, {
      grant_type: "authorization_code",
      code: codeBack.get("code")!,
      redirect_uri: REDIRECT,
      client_id: unexchanged.client_id,
      code_verifier: codePkce.verifier,
    });
    expect(lateCode.body.error).toBe("invalid_grant");
    expect((await new PageClient(s.url).get(new URL(settingsLink.url).pathname)).status).toBe(410);
    const lateSignIn = await waiting.post("/account/signin/verify", { code: waitingCode, flow: "account" });
    expect(lateSignIn.status).toBe(400);
    expect(lateSignIn.html).toContain("No code is waiting any more");

    // kim-dup is gone for everyone: no sign-in, no re-registration, no contact
    const stranger = new PageClient(s.url);
    await stranger.get("/account");
    // Asked for a code, the page answers as for any handle (it never tells which exist), and no code can be right.
    const noCode = await stranger.post("/account/signin/code", { handle: "kim-dup", flow: "account" });
    expect(noCode.status).toBe(303);
    const guess = await stranger.post("/account/signin/verify", { code: "0000-0000", flow: "account" });
    expect(guess.html).toContain("That code is not right");
    expect((await stranger.get("/account")).html).not.toContain("Signed in as");
    const again = await s.call("register_agent", { handle: "kim-dup", display_name: "Again" });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");
    const add = await s.call("add_contact", { handle: "kim-dup", idempotency_key: "merge-add-1" }, friend.key);
    expect(add.status).toBe(404);
    expect(add.body.error.code).toBe("NOT_FOUND");
    expect((await s.ok("list_contacts", {}, pal.key)).contacts).toEqual([]);
    const byCode = await s.call("add_contact", { code: contactCode, idempotency_key: "merge-add-2" }, friend.key);
    expect(byCode.body.error.code).toBe("NOT_FOUND");
    const newcomer = await s.ok("join_network", { client_name: "Newcomer" });
    const creating = new PageClient(s.url);
    await creating.get("/join");
    await creating.post("/join", { user_code: newcomer.user_code });
    const taken = await creating.post("/join/create", { handle: "kim-dup", display_name: "Someone" });
    expect(taken.status).toBe(409);
    expect(taken.html).toContain("That handle is taken");
    // another browser signed in as kim-dup is signed out
    expect((await elsewhere.get("/account")).html).toContain("Send me a code");
    // kim-dup's provider login now signs in to kim-main
    const viaProvider = new PageClient(s.url);
    await viaProvider.get("/account");
    await world.providerSignIn(viaProvider, "/account/oidc/start?flow=account", "kim-b");
    expect((await viaProvider.get("/account")).html).toContain("Signed in as <strong>@kim-main</strong>");
    expect((await s.ok("get_me", {}, main.agent.key)).verification.email).toBe(true);
  });

  test("signed in as the handle to keep, the offer shows the other; joining it keeps this browser signed in", async () => {
    const main = await linkedHandle("lee-main", "lee-a");
    const dup = await linkedHandle("lee-dup", "lee-b");
    const account = await main.b.get("/account");
    expect(account.html).toContain("also verified on <strong>@lee-dup</strong>");
    expect(account.html).toContain("keep @lee-main, retire @lee-dup");
    const confirm = await main.b.get(mergePath("lee-main", "lee-dup"));
    expect(confirm.status).toBe(200);
    const done = await main.b.post("/account/merge", { keep: "lee-main", retire: "lee-dup" });
    expect(done.html).toContain("@lee-dup is joined into @lee-main: 1 app now acts as @lee-main");
    expect(done.html).toContain("Signed in as <strong>@lee-main</strong>");
    expect(await handleOf(dup.agent.key)).toBe("lee-main");
    // the browser that was signed in as lee-dup is signed out
    expect((await dup.b.get("/account")).html).toContain("Send me a code");
    // a retired handle cannot be joined again, nor kept
    expect((await main.b.get(mergePath("lee-dup", "lee-main"))).status).toBe(404);
  });

  test("what still needs the handle blocks the join, named one by one, until it is finished", async () => {
    const main = await linkedHandle("max-main", "max-a");
    const dup = await linkedHandle("max-dup", "max-b");
    const pal = await s.register("max-pal");
    await s.ok("add_contact", { handle: "max-pal" }, dup.agent.key);
    await s.ok("respond_contact_request", { handle: "max-dup", action: "accept" }, pal.key);
    const { group } = await s.ok("create_group", { name: "Trip", currency: "EUR" }, dup.agent.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id }, dup.agent.key);
    await s.ok("join_group", { invite_code: invite.code }, pal.key);
    await s.ok("add_expense", { group_id: group.group_id, description: "Hotel", amount: "30.00" }, dup.agent.key);
    const { payment } = await s.ok("record_payment", { group_id: group.group_id, to: "max-dup", amount: "5.00" }, pal.key);
    const { group: direct } = await s.ok("open_direct_ledger", { handle: "max-pal", currency: "EUR" }, dup.agent.key);
    await s.ok("add_expense", { group_id: direct.group_id, description: "Taxi", amount: "10.00" }, dup.agent.key);
    const startsAt = new Date(s.clock.now().getTime() + 7 * 86_400_000).toISOString();
    const { plan } = await s.ok("create_plan", { title: "Dinner", options: [{ starts_at: startsAt }], invitees: ["max-pal"] }, dup.agent.key);

    const blocked = await main.b.get(mergePath("max-main", "max-dup"));
    expect(blocked.status).toBe(409);
    expect(blocked.html).toContain("First, finish these");
    expect(blocked.html).toContain("@max-dup is still a member of the group “Trip”, balance +15.00 EUR: settle up, then leave it.");
    expect(blocked.html).toContain("@max-dup&#39;s direct ledger with @max-pal has a balance of +5.00 EUR: settle up first.");
    expect(blocked.html).toContain("A payment of 5.00 EUR from @max-pal to @max-dup waits for @max-dup to confirm it.");
    expect(blocked.html).toContain("@max-dup organises the plan “Dinner”, which is still ahead: cancel it or let it pass.");
    expect(blocked.html).not.toContain(">Join @max-dup into @max-main</button>");
    // a forged or stale confirmation is refused in its transaction, naming what blocks it, and changes nothing
    const refused = await main.b.post("/account/merge", { keep: "max-main", retire: "max-dup" });
    expect(refused.status).toBe(409);
    expect(refused.html).toContain("@max-dup cannot be joined yet:");
    // Said to a person: what to finish, without the tools an agent would call for it.
    expect(refused.html).toContain("cancel it or let it pass.");
    expect(refused.html).not.toContain("cancel_plan");
    expect(await handleOf(dup.agent.key)).toBe("max-dup");

    await s.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, dup.agent.key);
    await s.ok("record_payment", { group_id: group.group_id, from: "max-pal", amount: "10.00" }, dup.agent.key);
    await s.ok("leave_group", { group_id: group.group_id }, dup.agent.key);
    await s.ok("cancel_plan", { plan_id: plan.plan_id }, dup.agent.key);
    const stillDirect = await main.b.get(mergePath("max-main", "max-dup"));
    expect(stillDirect.status).toBe(409);
    expect(stillDirect.html).toContain("direct ledger with @max-pal has a balance of +5.00 EUR");
    expect(stillDirect.html).not.toContain("“Trip”");
    await s.ok("record_payment", { group_id: direct.group_id, from: "max-pal", amount: "5.00" }, dup.agent.key);

    const ready = await main.b.get(mergePath("max-main", "max-dup"));
    expect(ready.status).toBe(200);
    expect(ready.html).toContain(">Join @max-dup into @max-main</button>");
    const done = await main.b.post("/account/merge", { keep: "max-main", retire: "max-dup" });
    expect(done.status).toBe(200);
    // the settled direct ledger stays readable for the other person, archived
    expect((await s.ok("get_group", { group_id: direct.group_id }, pal.key)).group.archived).toBe(true);
  });

  test("joining needs the provider's proof in this browser session; a sign-in by code alone is not enough", async () => {
    await linkedHandle("ned-main", "ned-a");
    const dup = await linkedHandle("ned-dup", "ned-b");
    const b = new PageClient(s.url);
    await b.get("/account");
    const page = await signInWithCode(s, b, "account", "ned-dup", dup.agent.key);
    expect(page.html).toContain("also verified on <strong>@ned-main</strong>");
    expect(page.html).not.toContain("/account/merge?");
    expect(page.html).toContain("sign in with your identity provider</a> in this browser to join the two");
    const get = await b.get(mergePath("ned-main", "ned-dup"));
    expect(get.status).toBe(403);
    expect(get.html).toContain("first sign in with your identity provider in this browser");
    expect((await b.post("/account/merge", { keep: "ned-main", retire: "ned-dup" })).status).toBe(403);
    expect(await handleOf(dup.agent.key)).toBe("ned-dup");
    // signed out, nothing is offered
    const anonymous = new PageClient(s.url);
    await anonymous.get("/account");
    expect((await anonymous.get(mergePath("ned-main", "ned-dup"))).status).toBe(401);
    // after the provider sign-in in this browser, the offer appears
    await world.providerSignIn(b, "/account/oidc/start?flow=account", "ned-b");
    expect((await b.get("/account")).html).toContain(`href="/account/merge?keep=ned-main&amp;retire=ned-dup"`);
  });

  test("only two handles sharing the e-mail just proved can be joined; the form needs its CSRF token", async () => {
    await linkedHandle("oli-main", "oli-a");
    const dup = await linkedHandle("oli-dup", "oli-b");
    const other = await linkedHandle("pia-main", "pia-a");
    for (const [keep, retire] of [
      ["pia-main", "oli-dup"],
      ["oli-dup", "pia-main"],
      ["oli-dup", "oli-dup"],
      ["oli-main", "pia-main"],
      ["nobody-here", "oli-dup"],
    ] as const) {
      const r = await dup.b.get(mergePath(keep, retire));
      expect(r.status).toBe(404);
      expect(r.html).not.toContain(retire === "oli-dup" ? keep : retire);
    }
    expect((await dup.b.post("/account/merge", { keep: "pia-main", retire: "oli-dup" })).status).toBe(404);
    expect((await dup.b.post("/account/merge", { keep: "oli-main", retire: "oli-dup" }, null)).status).toBe(403);
    expect(await handleOf(dup.agent.key)).toBe("oli-dup");
    expect(await handleOf(other.agent.key)).toBe("pia-main");
  });

  test("an e-mail the provider did not verify makes no twin", async () => {
    const main = await linkedHandle("zed-main", "zed-a");
    const unverified = await linkedHandle("zed-dup", "unverified-zed");
    expect((await main.b.get("/account")).html).not.toContain("also verified on");
    expect((await unverified.b.get("/account")).html).not.toContain("also verified on");
    expect((await unverified.b.get(mergePath("zed-main", "zed-dup"))).status).toBe(403);
  });
});
