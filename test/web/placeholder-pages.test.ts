// Placeholder members on the web pages, through real HTTP with a cookie jar: a member adds a friend by name on the
// group's page and gets the claim link once; the friend opens it, creates an account, and takes the place over.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { balancesOf, groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode } from "./page-client.ts";

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
  expect(page.html).toContain('href="/signup"');
  await friend.get("/signup");
  const signedUp = await friend.post("/signup", { handle: "pw-dana", display_name: "Dana D", method: "password", password: "kettle orbit lantern 7 meadow" });
  expect(signedUp.status).toBe(303);
  page = await friend.get(path);
  expect(page.html).toContain("Take over Dana as @pw-dana");
  const key = page.html.match(/name="idempotency_key" value="([^"]+)"/)![1]!;
  const claimed = await friend.post(path, { idempotency_key: key });
  expect(claimed.status).toBe(303);
  expect(claimed.location).toBe(`/groups/${g.group_id}`);
  expect(await balancesOf(s, g.by["pw-bob"]!.key, g.group_id)).toEqual({ "pw-alice": 1500, "pw-bob": 0, "pw-dana": -1500 });
  expect((await friend.follow(claimed)).html).toContain("pw-dana owes 15.00 EUR");

  // Spent: the link now says so, for anyone.
  expect((await friend.get(path)).status).toBe(404);
  expect((await alice.get(path)).html).toContain("already used");
}, 60_000);
