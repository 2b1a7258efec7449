// Placeholder members on the web pages, through real HTTP with a cookie jar: a member adds a friend by name on the
// group's page and gets the claim link once (with a Copy link button); the friend opens it, creates an account or
// signs in, comes back to the link's page (the `next` return path) and takes the place over.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { inboxCode, PageClient, signInWithCode } from "./page-client.ts";

let s: TestServer;
let g: TestGroup;
beforeAll(async () => {
  s = await startTestServer();
  g = await groupWith(s, ["pw-alice", "pw-bob"], "EUR", "Cabin");
}, 60_000);
afterAll(() => s.stop());

test("a member adds a friend by name and sees the claim link once; the friend signs up on the link's page and takes the place over", async () => {
  const alice = new PageClient(s.url);
  await alice.get("/groups");
  await signInWithCode(s, alice, "groups", "pw-alice", g.by["pw-alice"]!.key);
  let page = await alice.get(`/groups/${g.group_id}`);
  expect(page.html).toContain("Add someone without an account");
  const added = await alice.post(`/groups/${g.group_id}/placeholders`, { form: "placeholder", name: "Dana", idempotency_key: crypto.randomUUID() });
  expect(added.status).toBe(303);
  expect(added.location).toContain("done=placeholder");
  page = await alice.follow(added);
  const link = page.html.match(/id="f-claim-url" name="claim_url" value="([^"]+)"/)?.[1];
  expect(link).toBeDefined();
  expect(link!).toContain("/claim/claim-");
  expect(page.html).toContain('Dana <span class="badge">no account yet</span>');
  // A Copy link button, hidden until the page's own script (CSP script-src 'self') shows it: without it the field stays.
  expect(page.html).toContain('<button type="button" class="secondary" data-copy="f-claim-url" hidden>Copy link</button>');
  expect(page.html).toContain('<script src="/assets/copy.js" defer></script>');
  expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
  const script = await s.raw("/assets/copy.js");
  expect(script.headers.get("content-type")).toStartWith("text/javascript");
  expect(await script.text()).toContain("navigator.clipboard.writeText");
  // The link is shown once: the plain page no longer has it.
  expect((await alice.get(`/groups/${g.group_id}`)).html).not.toContain("f-claim-url");

  const dana = (await s.ok("get_group", { group_id: g.group_id }, g.by["pw-bob"]!.key)).group.members.find((m: any) => m.agent === null);
  // The expense form names Dana and splits with her by member_id.
  const form = await alice.get(`/groups/${g.group_id}/expenses/new`);
  expect(form.html).toContain(`<label for="f-in_${dana.member_id}">Dana (no account yet) is in it</label>`);
  const sent = await alice.post(`/groups/${g.group_id}/expenses/new`, {
    description: "Firewood",
    amount: "30.00",
    currency: "EUR",
    paid_by: "pw-alice",
    split_mode: "equal",
    "in_pw-alice": "1",
    [`in_${dana.member_id}`]: "1",
    idempotency_key: crypto.randomUUID(),
  });
  expect(sent.status).toBe(303);
  const expense = (await s.ok("list_expenses", { group_id: g.group_id }, g.by["pw-bob"]!.key)).expenses[0];
  expect(Object.fromEntries(expense.shares.map((x: any) => [x.member_id, x.amount_minor]))).toEqual({
    [g.by["pw-alice"]!.agent_id]: 1500,
    [dana.member_id]: 1500,
  });
  expect((await alice.get(`/groups/${g.group_id}/expenses/${expense.expense_id}`)).html).toContain("Dana (no account yet): 15.00 EUR");
  expect((await alice.get(`/groups/${g.group_id}`)).html).toContain("Dana (no account yet) owes 15.00 EUR");

  // The friend, signed out, opens the link: what it is, and how to get an account.
  const friend = new PageClient(s.url);
  const path = new URL(link!).pathname;
  page = await friend.get(path);
  expect(page.status).toBe(200);
  expect(page.html).toContain("Cabin");
  expect(page.html).toContain("-15.00 EUR");
  const signupLink = `/signup?next=${encodeURIComponent(path)}`;
  expect(page.html).toContain(`href="${signupLink}"`);
  // The sign-in form is on the page itself, its ways coming back here.
  expect(page.html).toContain(`<form method="post" action="/signin/password">`);
  expect(page.html).toContain(`<input type="hidden" name="next" value="${path}">`);
  page = await friend.get(signupLink);
  expect(page.html).toContain(`<input type="hidden" name="next" value="${path}">`);
  expect(page.html).toContain(`href="/signin?next=${encodeURIComponent(path)}"`);
  const next = page.html.match(/name="next" value="([^"]+)"/)![1]!;
  const signedUp = await friend.post("/signup", {
    handle: "pw-dana",
    display_name: "Dana D",
    method: "password",
    password: "kettle orbit lantern 7 meadow",
    next,
  });
  expect(signedUp.status).toBe(303);
  expect(signedUp.location).toBe(path);
  page = await friend.follow(signedUp);
  expect(page.html).toContain("Take over Dana as @pw-dana");
  const key = page.html.match(/name="idempotency_key" value="([^"]+)"/)![1]!;
  const claimed = await friend.post(path, { idempotency_key: key });
  expect(claimed.status).toBe(303);
  expect(claimed.location).toBe(`/groups/${g.group_id}`);
  expect(await balancesOf(s, g.by["pw-bob"]!.key, g.group_id)).toEqual({ "pw-alice": 1500, "pw-bob": 0, "pw-dana": -1500 });
  expect((await friend.follow(claimed)).html).toContain("Dana D owes 15.00 EUR");

  // Spent: the link now says so, for anyone.
  expect((await friend.get(path)).status).toBe(404);
  expect((await alice.get(path)).html).toContain("already used");
}, 60_000);

/** A placeholder added through the tool, and the path of its claim link. */
async function placeholder(name: string): Promise<string> {
  const { invite } = await s.ok("create_group_invite", { group_id: g.group_id, name }, g.by["pw-alice"]!.key);
  return new URL(invite.placeholder.claim_url).pathname;
}

/** Takes the placeholder over from its claim page, where the browser has just landed. */
async function claimFrom(b: PageClient, path: string, page: { html: string }, name: string, handle: string) {
  expect(page.html).toContain(`Take over ${name} as @${handle}`);
  const key = page.html.match(/name="idempotency_key" value="([^"]+)"/)![1]!;
  const claimed = await b.post(path, { idempotency_key: key });
  expect(claimed.status).toBe(303);
  expect(claimed.location).toBe(`/groups/${g.group_id}`);
  const members = (await s.ok("get_group", { group_id: g.group_id }, g.by["pw-alice"]!.key)).group.members;
  expect(members.some((m: any) => m.agent?.handle === handle)).toBe(true);
  expect(members.some((m: any) => m.agent === null && m.name === name)).toBe(false);
}

test("someone with an account signs in with a password from the claim link, comes back to it and takes the place over", async () => {
  const path = await placeholder("Erin");
  const erin = new PageClient(s.url);
  await erin.get("/signup");
  expect((await erin.post("/signup", { handle: "pw-erin", display_name: "Erin", method: "password", password: "violet harbour 42 compass" })).location).toBe(
    "/",
  );
  await erin.get("/account");
  expect((await erin.post("/account/signout", {})).status).toBe(303);
  const claimPage = await erin.get(path);
  expect(claimPage.html).toContain("you come back to this page");
  const signin = await erin.get(`/signin?next=${encodeURIComponent(path)}`);
  // Every way to sign in on the page carries the return path: the passkey, and the handle's form (password or inbox code).
  expect(signin.html.match(new RegExp(`<input type="hidden" name="next" value="${path}">`, "g"))?.length).toBe(2);
  expect(signin.html).toContain(`href="/signup?next=${encodeURIComponent(path)}"`);
  const wrong = await erin.post("/signin/password", { handle: "pw-erin", password: "not the password at all", next: path });
  expect(wrong.status).toBe(401);
  expect(wrong.html).toContain(`<input type="hidden" name="next" value="${path}">`);
  const signedIn = await erin.post("/signin/password", { handle: "pw-erin", password: "violet harbour 42 compass", next: path });
  expect(signedIn.status).toBe(303);
  expect(signedIn.location).toBe(path);
  await claimFrom(erin, path, await erin.follow(signedIn), "Erin", "pw-erin");
}, 60_000);

test("an agent's human signs in with the code in its inbox from the claim link and comes back to it", async () => {
  const path = await placeholder("Fay");
  const fay = await s.register("pw-fay");
  const b = new PageClient(s.url);
  await b.get(`/signin?next=${encodeURIComponent(path)}`);
  const sent = await b.post("/account/signin/code", { handle: "pw-fay", flow: "account", next: path });
  expect(sent.status).toBe(303);
  expect(sent.location).toBe(`/account?next=${encodeURIComponent(path)}`);
  const codePage = await b.follow(sent);
  expect(codePage.html).toContain("One-time code");
  expect(codePage.html).toContain(`<input type="hidden" name="next" value="${path}">`);
  const verified = await b.post("/account/signin/verify", { code: await inboxCode(s, fay.key), flow: "account", next: path });
  expect(verified.status).toBe(303);
  expect(verified.location).toBe(path);
  await claimFrom(b, path, await b.follow(verified), "Fay", "pw-fay");
}, 60_000);

test("a return path that is not a path of this server is ignored: the usual page follows", async () => {
  const bad = ["//evil.example", "https://evil.example", "/\\evil", "/\\/evil.example", "/\t/evil.example", "javascript:alert(1)", "evil"];
  const b = new PageClient(s.url);
  for (const [i, next] of bad.entries()) {
    const signup = await b.get(`/signup?next=${encodeURIComponent(next)}`);
    expect(signup.status).toBe(200);
    expect(signup.html).not.toContain('name="next"');
    expect(signup.html).toContain('href="/signin"');
    expect((await b.get(`/signin?next=${encodeURIComponent(next)}`)).html).not.toContain('name="next"');
    const handle = `pw-away${i}`;
    const made = await b.post("/signup", { handle, display_name: "Away", method: "password", password: "copper lantern 9 thistle", next });
    expect(made.status).toBe(303);
    expect(made.location).toBe("/");
    await b.get("/signin");
    const again = await b.post("/signin/password", { handle, password: "copper lantern 9 thistle", next });
    expect(again.status).toBe(303);
    expect(again.location).toBe("/account");
  }
}, 60_000);
