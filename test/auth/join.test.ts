import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MINUTE } from "../../server/clock.ts";
import { createPlatformInvite } from "../../server/domain/platform-invites.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient, inboxCode, signInWithCode } from "../web/page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const start = (args: Record<string, unknown> = {}) => s.ok("join_network", { client_name: "Desk Assistant", ...args });
const poll = (poll_token: string) => s.ok("finish_join", { poll_token });

/** Opens enter_url in a fresh browser and submits the user code; returns the browser on the join page. */
async function openJoin(join: { enter_url: string; user_code: string }) {
  const b = new PageClient(s.url);
  const first = await b.get(join.enter_url.slice(s.url.length));
  expect(first.status).toBe(200);
  expect(first.html).toContain(`value="${join.user_code}"`);
  const entered = await b.follow(await b.post("/join", { user_code: join.user_code.toLowerCase().replace("-", " ") }));
  expect(entered.html).toContain("Desk Assistant");
  return b;
}

describe("join_network", () => {
  test("opens a pending session whose message carries enter_url and user_code", async () => {
    const j = await start({ suggested_handle: "newbie", display_name: "New Bie" });
    expect(j.enter_url).toStartWith(`${s.url}/join?user_code=`);
    expect(j.user_code).toMatch(/^[B-Z]{4}-[B-Z]{4}$/);
    expect(j.poll_token.length).toBeGreaterThanOrEqual(20);
    expect(j.interval_seconds).toBe(5);
    expect(Date.parse(j.expires_at) - s.clock.now().getTime()).toBe(15 * MINUTE);
    expect(j.message_for_human).toContain(j.enter_url);
    expect(j.message_for_human).toContain(j.user_code);
    expect(j.suggested_next).toEqual(["finish_join"]);
    const p = await poll(j.poll_token);
    expect(p).toMatchObject({ status: "pending", created: null, agent: null, api_key: null, joined_group: null });
  });

  test("the REST aliases /v1/join-network and /v1/join-network/finish answer like the tools", async () => {
    const res = await s.raw("/v1/join-network", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Alias App" }),
    });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as any;
    const fin = await s.raw("/v1/join-network/finish", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ poll_token: data.poll_token }),
    });
    expect(((await fin.json()) as any).data.status).toBe("pending");
  });

  test("validation: client_name is required, 1-40 chars; poll_token 20-200 chars; unknown token is NOT_FOUND", async () => {
    expect((await s.call("join_network", {})).status).toBe(400);
    expect((await s.call("join_network", { client_name: "x".repeat(41) })).status).toBe(400);
    expect((await s.call("join_network", { client_name: "bad\u0007name" })).status).toBe(400);
    expect((await s.call("finish_join", { poll_token: "short" })).status).toBe(400);
    const r = await s.call("finish_join", { poll_token: "join_" + "x".repeat(43) });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("NOT_FOUND");
  });
});

describe("finishing a join on the page", () => {
  test("existing handle: code from the other agent's inbox, approve, key handed out once", async () => {
    const alice = await s.register("join-alice");
    const j = await start();
    const b = await openJoin(j);
    const signedIn = await signInWithCode(s, b, "join", "join-alice", alice.key);
    expect(signedIn.html).toContain("Connect to @join-alice");
    // the code item is resolved once used
    const item = (await s.ok("get_inbox", { since: "0", include_seen: true }, alice.key)).items.find((i: any) => i.type === "auth.join_code");
    expect(item).toMatchObject({ app: "network", from: null, resolved: true, payload: { purpose: "join" } });
    expect(item.payload.client_name.untrusted_content).toBe("Desk Assistant");
    expect((await poll(j.poll_token)).status).toBe("pending");
    const approved = await b.follow(await b.post("/join/approve", {}));
    expect(approved.html).toContain("is now connected to <strong>@join-alice</strong>");
    const first = await poll(j.poll_token);
    expect(first).toMatchObject({ status: "connected", created: false, joined_group: null });
    expect(first.agent.handle).toBe("join-alice");
    expect(first.api_key).toStartWith("svc_");
    const again = await poll(j.poll_token);
    expect(again).toMatchObject({ status: "connected", created: false, api_key: null });
    const me = await s.ok("get_me", {}, first.api_key);
    expect(me.agent.agent_id).toBe(alice.agent_id);
    const clients = (await s.ok("list_clients", {}, alice.key)).clients;
    expect(clients.map((c: any) => c.name)).toContain("Desk Assistant");
  });

  test("refusing: the session becomes denied", async () => {
    const j = await start();
    const b = await openJoin(j);
    const denied = await b.follow(await b.post("/join/deny", {}));
    expect(denied.html).toContain("You refused");
    expect(await poll(j.poll_token)).toMatchObject({ status: "denied", api_key: null, suggested_next: ["join_network"] });
    expect((await b.post("/join/approve", {})).status).toBe(409);
  });

  test("a new human creates a handle there: created true, and the page signs them in", async () => {
    const j = await start({ suggested_handle: "fresh-one", display_name: "Fresh One" });
    const b = await openJoin(j);
    const page = await b.get("/join");
    expect(page.html).toContain('value="fresh-one"');
    expect(page.html).toContain('value="Fresh One"');
    await s.register("taken-handle");
    const taken = await b.post("/join/create", { handle: "taken-handle", display_name: "X" });
    expect(taken.status).toBe(409);
    const bad = await b.post("/join/create", { handle: "No Way", display_name: "X" });
    expect(bad.status).toBe(400);
    const made = await b.post("/join/create", { handle: "fresh-one", display_name: "Fresh One", description: "hello" });
    expect(made.status).toBe(303);
    const r = await poll(j.poll_token);
    expect(r).toMatchObject({ status: "connected", created: true });
    expect(r.agent).toMatchObject({ handle: "fresh-one", display_name: "Fresh One", description: "hello" });
    const account = await b.get("/account");
    expect(account.html).toContain("Signed in as <strong>@fresh-one</strong>");
  });

  test("invite_code joins the invite's group in the same step", async () => {
    const owner = await s.register("join-owner");
    const g = await s.ok("create_group", { name: "Flat", currency: "EUR" }, owner.key);
    const inv = await s.ok("create_group_invite", { group_id: g.group.group_id }, owner.key);
    const j = await start({ invite_code: inv.invite.code });
    const b = await openJoin(j);
    await b.post("/join/create", { handle: "join-invited", display_name: "Invited" });
    const r = await poll(j.poll_token);
    expect(r.joined_group).toMatchObject({ group_id: g.group.group_id, name: "Flat", member_count: 2 });
    expect((await poll(j.poll_token)).joined_group.group_id).toBe(g.group.group_id);
  });

  test("a stale invite code does not cost the connection: joined_group is null", async () => {
    const j = await start({ invite_code: "no-such-invite-code" });
    const b = await openJoin(j);
    await b.post("/join/create", { handle: "join-stale", display_name: "Stale" });
    const r = await poll(j.poll_token);
    expect(r).toMatchObject({ status: "connected", joined_group: null });
    expect(r.api_key).toStartWith("svc_");
  });

  test("the session expires after 15 minutes: expired on poll, and the code no longer opens it", async () => {
    const j = await start();
    const b = new PageClient(s.url);
    await b.get("/join");
    s.clock.advance(15 * MINUTE);
    expect(await poll(j.poll_token)).toMatchObject({ status: "expired", suggested_next: ["join_network"] });
    const r = await b.post("/join", { user_code: j.user_code });
    expect(r.status).toBe(400);
    expect(r.html).toContain("not valid, or it has expired");
  });

  test("a wrong user code is refused without echoing it", async () => {
    const b = new PageClient(s.url);
    await b.get("/join");
    const r = await b.post("/join", { user_code: "<b>XX</b>" });
    expect(r.status).toBe(400);
    expect(r.html).not.toContain("<b>XX</b>");
    expect(r.html).not.toContain("&lt;b&gt;XX");
  });
});

describe("one-time codes", () => {
  test("wrong codes are counted in the database; after 5 the code dies even for the right one", async () => {
    const bob = await s.register("join-bob");
    const b = await openJoin(await start());
    await b.post("/account/signin/code", { handle: "join-bob", flow: "join" });
    for (let left = 4; left >= 1; left--) {
      const r = await b.post("/account/signin/verify", { code: "0000-0000", flow: "join" });
      expect(r.status).toBe(400);
      expect(r.html).toContain(`${left} ${left === 1 ? "try" : "tries"} left`);
    }
    expect((await b.post("/account/signin/verify", { code: "0000-0000", flow: "join" })).html).toContain("too many wrong tries");
    const right = await b.post("/account/signin/verify", { code: await inboxCode(s, bob.key), flow: "join" });
    expect(right.status).toBe(400);
    const rows = await s.server.db.raw.execute("SELECT attempts FROM signin_codes ORDER BY created_at DESC LIMIT 1");
    expect(Number(rows.rows[0]!.attempts)).toBe(5);
  });

  test("codes expire after 10 minutes", async () => {
    const carol = await s.register("join-carol");
    const b = await openJoin(await start());
    await b.post("/account/signin/code", { handle: "join-carol", flow: "join" });
    const code = await inboxCode(s, carol.key);
    s.clock.advance(10 * MINUTE);
    const r = await b.post("/account/signin/verify", { code, flow: "join" });
    expect(r.status).toBe(400);
    expect(r.html).toContain("No code is waiting");
  });

  test("a code works only in the browser that asked for it", async () => {
    const dave = await s.register("join-dave");
    const b = await openJoin(await start());
    await b.post("/account/signin/code", { handle: "join-dave", flow: "join" });
    const other = await openJoin(await start());
    const r = await other.post("/account/signin/verify", { code: await inboxCode(s, dave.key), flow: "join" });
    expect(r.status).toBe(400);
    expect((await b.post("/account/signin/verify", { code: await inboxCode(s, dave.key), flow: "join" })).status).toBe(303);
  });

  test("at most 5 codes per handle per hour; unknown handles are said so", async () => {
    await s.register("join-eve");
    const b = await openJoin(await start());
    for (let i = 0; i < 5; i++) expect((await b.post("/account/signin/code", { handle: "join-eve", flow: "join" })).status).toBe(303);
    const sixth = await b.post("/account/signin/code", { handle: "join-eve", flow: "join" });
    expect(sixth.status).toBe(429);
    expect(sixth.html).toContain("Too many sign-in codes");
    // A handle no agent has is answered like one that exists (test/auth/trust.test.ts compares the two).
    expect((await b.post("/account/signin/code", { handle: "nobody-here", flow: "join" })).status).toBe(303);
    expect((await b.post("/account/signin/code", { handle: "join-eve", flow: "elsewhere" })).status).toBe(400);
  });
});

describe("CSRF and cookies", () => {
  test("every form needs the session's token; the cookie is HttpOnly and SameSite", async () => {
    const b = new PageClient(s.url);
    const page = await b.get("/join");
    const cookie = page.headers.getSetCookie()[0]!;
    expect(cookie).toMatch(/^svc_session=ws_[\w-]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    const j = await start();
    expect((await b.post("/join", { user_code: j.user_code }, null)).status).toBe(403);
    expect((await b.post("/join", { user_code: j.user_code }, "csrf_forged")).status).toBe(403);
    const other = new PageClient(s.url);
    await other.get("/join");
    expect((await b.post("/join", { user_code: j.user_code }, other.csrf)).status).toBe(403);
    const stranger = new PageClient(s.url);
    expect((await stranger.post("/join", { user_code: j.user_code }, b.csrf)).status).toBe(403);
    expect((await b.post("/join", { user_code: j.user_code })).status).toBe(303);
  });

  test("signing in replaces the session secret: the old cookie stops working", async () => {
    const fay = await s.register("join-fay");
    const b = await openJoin(await start());
    const before = b.cookies.get("svc_session")!;
    await signInWithCode(s, b, "join", "join-fay", fay.key);
    expect(b.cookies.get("svc_session")).not.toBe(before);
    const old = new PageClient(s.url);
    old.cookies.set("svc_session", before);
    expect((await old.get("/account")).html).not.toContain("@join-fay");
  });
});

describe("housekeeping", () => {
  test("expire_auth_records deletes join sessions, codes and browser sessions a day after they expired", async () => {
    const j = await start();
    const b = await openJoin(j);
    await s.register("join-house");
    await b.post("/account/signin/code", { handle: "join-house", flow: "join" });
    const count = async (table: string) => Number((await s.server.db.raw.execute(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
    s.clock.advance(60 * MINUTE);
    await s.server.jobs.runDue();
    expect(await count("join_sessions")).toBeGreaterThan(0);
    expect((await poll(j.poll_token)).status).toBe("expired");
    s.clock.advance(24 * 60 * MINUTE);
    const outcomes = await s.server.jobs.runDue();
    expect(outcomes.find((o) => o.job === "expire_auth_records")?.count).toBeGreaterThan(0);
    for (const table of ["join_sessions", "signin_codes", "web_sessions"]) expect(await count(table)).toBe(0);
    expect((await s.call("finish_join", { poll_token: j.poll_token })).status).toBe(404);
  });
});

describe("invite-only deployments", () => {
  test("creating a handle on the join page needs a platform invite code", async () => {
    const closed = await startTestServer({ inviteOnly: true });
    try {
      const code = await closed.server.db.tx((tx) => createPlatformInvite(tx, closed.clock.now(), { uses: 1, expiresAt: null, note: null }));
      const j = await closed.ok("join_network", { client_name: "Closed App" });
      const b = new PageClient(closed.url);
      await b.get("/join");
      await b.post("/join", { user_code: j.user_code });
      expect((await b.get("/join")).html).toContain("Invite code for this server");
      const refused = await b.post("/join/create", { handle: "closed-one", display_name: "C", platform_invite_code: "wrong" });
      expect(refused.status).toBe(403);
      expect((await closed.call("finish_join", { poll_token: j.poll_token })).body.data.status).toBe("pending");
      expect((await b.post("/join/create", { handle: "closed-one", display_name: "C", platform_invite_code: code })).status).toBe(303);
      expect((await closed.ok("finish_join", { poll_token: j.poll_token })).created).toBe(true);
    } finally {
      await closed.stop();
    }
  });
});
