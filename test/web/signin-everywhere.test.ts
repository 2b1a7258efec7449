// Every page that signs a person in shows the one sign-in form with every way in (signin.ts signinBlock): /signin,
// /account signed out, /join (what `svc login` opens), the OAuth sign-in before consent and a claim link's page. The
// password form comes first and its first button is the password one (Enter presses it; the Chromium side is in
// a11y.test.ts); the same handle asks for a code; a passkey; a link by e-mail when the server sends e-mail; the
// identity provider when one is set. Each way ends where it began, and a refused one shows the same page again.
// Through the real server with plain HTTP form posts (a cookie jar), and a real SMTP server on loopback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { authorizePath, pkce, registerClient } from "../auth/oauth-helpers.ts";
import { groupOf } from "../ledger/ledger-fixtures.ts";
import { MailSink } from "./email-sink.ts";
import { PageClient } from "./page-client.ts";

const PASSWORD = "violet harbour 42 compass";
let sink: MailSink;
let s: TestServer;

beforeAll(async () => {
  sink = await MailSink.start();
  // The provider is never reached here: its link is only shown.
  s = await startTestServer({
    smtpUrl: sink.url,
    mailFrom: "svc <svc@svc.test>",
    oidc: { issuer: "http://127.0.0.1:9/issuer", clientId: "svc-test", clientSecret: "secret" },
  });
  const b = new PageClient(s.url);
  await b.get("/signup");
  expect((await b.post("/signup", { handle: "se-ann", display_name: "Ann", method: "password", password: PASSWORD })).status).toBe(303);
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await sink?.stop();
});

/** A browser on the /join page of a pending `svc login`, its code entered. */
async function onJoin(): Promise<{ b: PageClient; poll: string }> {
  const j = await s.ok("join_network", { client_name: "Terminal" });
  const b = new PageClient(s.url);
  await b.get(j.enter_url.slice(s.url.length));
  await b.follow(await b.post("/join", { user_code: j.user_code }));
  return { b, poll: j.poll_token };
}

/** A browser on the OAuth sign-in page before consent. */
async function onConsent(): Promise<PageClient> {
  const client = (await registerClient(s, { client_name: "Desk App" })).body;
  const b = new PageClient(s.url);
  const start = await b.get(authorizePath({ client_id: client.client_id, code_challenge: pkce().challenge, scope: "svc:read", state: "st", resource: s.url }));
  expect(start.location).toBe("/oauth/consent");
  return b;
}

/** The path of a claim link for a friend added by name to a group of someone else. */
async function claimPath(name: string): Promise<string> {
  const owner = await s.register(`se-own-${name.toLowerCase()}`);
  const other = await s.register(`se-oth-${name.toLowerCase()}`);
  const g = await groupOf(s, [owner, other], "EUR", `Trip ${name}`);
  const { invite } = await s.ok("create_group_invite", { group_id: g.group_id, name }, owner.key);
  return new URL(invite.placeholder.claim_url).pathname;
}

/** The forms of a page, each as its opening tag and its inside. */
const formsOf = (html: string) =>
  [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].map((m) => ({ action: m[1]!, inner: m[2]! }));

/** Every way in, on a page whose sign-in forms carry `flow` (and `next` when given). */
function offersEveryWay(html: string, flow: string, next?: string) {
  const forms = formsOf(html);
  const password = forms.find((f) => f.action === "/signin/password");
  expect(password).toBeDefined();
  expect(password!.inner).toContain(`<input type="hidden" name="flow" value="${flow}">`);
  expect(password!.inner).toContain('type="password"');
  // The form's first button (the one Enter presses) signs in with the password; the code button follows it.
  const buttons = [...password!.inner.matchAll(/<button [^>]*>/g)].map((m) => m[0]);
  expect(buttons[0]).toBe('<button type="submit">');
  expect(buttons.slice(1).some((b) => b.includes('formaction="/account/signin/code"'))).toBe(true);
  const passkey = forms.find((f) => f.action === "/signin/passkey");
  expect(passkey?.inner).toContain('data-passkey="signin"');
  expect(passkey?.inner).toContain(`<input type="hidden" name="flow" value="${flow}">`);
  expect(forms.filter((f) => f.action === "/signin/email").map((f) => f.inner.includes(`name="flow" value="${flow}"`))).toEqual([true, true]);
  expect(html).toContain(`href="/account/oidc/start?flow=${flow}${next ? `&amp;next=${encodeURIComponent(next)}` : ""}"`);
  // The page loads the passkey script (and may fetch its options).
  expect(html).toContain('<script src="/assets/passkey.js" defer></script>');
  if (next) for (const f of [password!, passkey!]) expect(f.inner).toContain(`<input type="hidden" name="next" value="${next}">`);
}

describe("one sign-in form on every page that signs a person in", () => {
  test("/signin, /account, /join, the OAuth sign-in and a claim link's page offer a password, a passkey, a code, an e-mail link and the provider", async () => {
    const b = new PageClient(s.url);
    offersEveryWay((await b.get("/signin")).html, "account");
    offersEveryWay((await b.get("/account")).html, "account");
    offersEveryWay((await (await onJoin()).b.get("/join")).html, "join");
    offersEveryWay((await (await onConsent()).get("/oauth/consent")).html, "authorize");
    const claim = await claimPath("Dana");
    offersEveryWay((await new PageClient(s.url).get(claim)).html, "account", claim);
  });

  test("a password on /join signs in and comes back to /join, where the app is connected", async () => {
    const { b, poll } = await onJoin();
    const signedIn = await b.post("/signin/password", { handle: "se-ann", password: PASSWORD, flow: "join" });
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe("/join");
    const page = await b.get("/join");
    expect(page.html).toContain("Connect to @se-ann");
    expect((await b.post("/join/approve", {})).status).toBe(303);
    const done = await s.ok("finish_join", { poll_token: poll });
    expect(done).toMatchObject({ status: "connected", created: false });
    expect(done.agent.handle).toBe("se-ann");
  });

  test("a wrong password on /join shows /join again with the error and the handle typed", async () => {
    const { b } = await onJoin();
    const wrong = await b.post("/signin/password", { handle: "se-ann", password: "not it at all, no", flow: "join" });
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain("<title>Connect Terminal · svc</title>");
    expect(wrong.html).toContain("The handle or the password is not right.");
    expect(wrong.html).toContain(
      'id="signin-handle" name="handle" required maxlength="32" autocomplete="username" aria-describedby="signin-handle-hint" type="text" value="se-ann"',
    );
  });

  test("a password on the OAuth sign-in comes back to the consent page", async () => {
    const b = await onConsent();
    await b.get("/oauth/consent");
    const signedIn = await b.post("/signin/password", { handle: "se-ann", password: PASSWORD, flow: "authorize" });
    expect(signedIn.location).toBe("/oauth/consent");
    const consent = await b.get("/oauth/consent");
    expect(consent.html).toContain("<title>Allow Desk App? · svc</title>");
    expect(consent.html).toContain("@se-ann");
  });

  test("a password on a claim link's page comes back to it, where the place is taken over", async () => {
    const claim = await claimPath("Eve");
    const b = new PageClient(s.url);
    await b.get(claim);
    const signedIn = await b.post("/signin/password", { handle: "se-ann", password: PASSWORD, flow: "account", next: claim });
    expect(signedIn.location).toBe(claim);
    expect((await b.get(claim)).html).toContain("Take over Eve as @se-ann");
  });

  test("an e-mail link asked for on /join signs in and comes back to /join", async () => {
    // Ann confirms an address first (the settings page, the link in the e-mail).
    const me = new PageClient(s.url);
    await me.get("/signin");
    await me.post("/signin/password", { handle: "se-ann", password: PASSWORD });
    await me.get("/settings");
    expect((await me.post("/settings/email", { email: "ann.se@example.org" })).status).toBe(303);
    const confirmLink = (await sink.next()).text.match(/\/settings\/email\/confirm\/[^\s]+/)![0];
    const confirm = await me.get(confirmLink);
    expect((await me.post("/settings/email/confirm", { token: confirm.html.match(/name="token" value="([^"]+)"/)![1]! })).html).toContain("is confirmed");

    const { b } = await onJoin();
    const asked = await b.post("/signin/email", { email: "ann.se@example.org", purpose: "signin", flow: "join" });
    expect(asked.status).toBe(200);
    expect(asked.html).toContain("<title>Connect Terminal · svc</title>");
    expect(asked.html).toContain("we sent a link to sign in");
    const link = (await sink.next()).text.match(/\/account\/reset\/[^\s]+/)![0];
    expect(link).toEndWith("?next=%2Fjoin");
    const open = await b.get(link);
    const back = await b.post("/account/reset", { token: open.html.match(/name="token" value="([^"]+)"/)![1]!, next: "/join" });
    expect(back.location).toBe("/join");
    expect((await b.get("/join")).html).toContain("Connect to @se-ann");
  });
});
