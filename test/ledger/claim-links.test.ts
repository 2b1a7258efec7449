// A placeholder's claim link works for 30 days (its invite's expires_at says until when); an expired one says how to
// get a new one, which the member who added the placeholder or the group's owner makes (create_group_invite with
// member_id), ending the old; and looking links up on the page is limited per address (docs/security.md, "Text messages, attachments, read-only tokens and guess windows").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DAY, MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { failure, groupWith } from "./ledger-fixtures.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ publicRateLimit: 30 });
});
afterAll(() => s.stop());

describe("claim links", () => {
  test("a link expires 30 days after it is made; then neither join_group nor the page takes it, and both say how to get a new one", async () => {
    const g = await groupWith(s, ["cl-ann", "cl-ben"]);
    const [ann, ben] = g.members;
    const made = s.clock.now();
    const { invite, message } = await s.ok("create_group_invite", { group_id: g.group_id, name: "Dana" }, ann!.key);
    const until = new Date(made.getTime() + 30 * DAY).toISOString();
    expect(invite.expires_at).toBe(until);
    expect(message).toContain(`works until ${until}`);
    const page = await new PageClient(s.url).get(`/claim/${invite.code}`);
    expect(page.html).toContain(`works until ${until.slice(0, 10)}`);

    s.clock.advance(30 * DAY + MINUTE);
    const carol = await s.register("cl-carol");
    const late = await failure(s, "join_group", { invite_code: invite.code }, carol.key);
    expect(late).toMatchObject({ status: 409, code: "CONFLICT", details: { member_id: invite.placeholder.member_id, expired_at: until } });
    expect(late.message).toContain("expired on");
    expect(late.message).toContain("create_group_invite with the placeholder's member_id");
    const gone = await new PageClient(s.url).get(`/claim/${invite.code}`);
    expect(gone.status).toBe(410);
    expect(gone.html).toContain("Ask whoever sent it for a new one");
    expect((await s.ok("get_group", { group_id: g.group_id }, ben!.key)).group.members.some((m: any) => m.member_id === invite.placeholder.member_id)).toBe(
      true,
    );

    // Only who added Dana, or the owner, makes a new link; the old one then names no placeholder at all.
    const refused = await failure(s, "create_group_invite", { group_id: g.group_id, member_id: invite.placeholder.member_id }, ben!.key);
    expect(refused).toMatchObject({ status: 403, code: "FORBIDDEN" });
    const renewed = await s.ok("create_group_invite", { group_id: g.group_id, member_id: invite.placeholder.member_id }, ann!.key);
    expect(renewed.invite).toMatchObject({ kind: "placeholder", placeholder: { member_id: invite.placeholder.member_id, name: "Dana" } });
    expect(renewed.invite.code).not.toBe(invite.code);
    expect(renewed.invite.expires_at).toBe(new Date(s.clock.now().getTime() + 30 * DAY).toISOString());
    expect(await failure(s, "join_group", { invite_code: invite.code }, carol.key)).toMatchObject({ status: 404, code: "NOT_FOUND" });
    expect((await s.ok("join_group", { invite_code: renewed.invite.code }, carol.key)).joined).toBe(true);
    // A claimed placeholder has no link to renew.
    expect(await failure(s, "create_group_invite", { group_id: g.group_id, member_id: invite.placeholder.member_id }, ann!.key)).toMatchObject({
      status: 404,
      code: "NOT_FOUND",
    });
  });

  test("create_group_invite takes one of handle, name and member_id", async () => {
    const g = await groupWith(s, ["cl-dan"]);
    const both = await failure(s, "create_group_invite", { group_id: g.group_id, name: "Eve", member_id: crypto.randomUUID() }, g.members[0]!.key);
    expect(both).toMatchObject({ status: 400, code: "VALIDATION_ERROR", path: "member_id" });
  });
});

describe("a new link on the group's page", () => {
  test("who added the placeholder, or the owner, sees New link; pressing it shows a new link once and ends the old", async () => {
    const g = await groupWith(s, ["clp-owner", "clp-adder", "clp-other"]);
    const [owner, adder, other] = g.members;
    const { invite } = await s.ok("create_group_invite", { group_id: g.group_id, name: "Fay" }, adder!.key);
    const browsers = new Map<string, PageClient>();
    for (const who of [owner!, adder!, other!]) {
      const b = new PageClient(s.url);
      await b.get("/account");
      await signInWithCode(s, b, "account", who.handle, who.key);
      browsers.set(who.handle, b);
    }
    const page = (handle: string) => browsers.get(handle)!.get(`/groups/${g.group_id}`);
    expect((await page(owner!.handle)).html).toContain("New link for Fay to take their place");
    expect((await page(other!.handle)).html).not.toContain("New link for Fay");
    const b = browsers.get(adder!.handle)!;
    expect((await page(adder!.handle)).html).toContain("New link for Fay to take their place");
    const shown = await b.follow(
      await b.post(`/groups/${g.group_id}/placeholders/link`, { member_id: invite.placeholder.member_id, idempotency_key: crypto.randomUUID() }),
    );
    expect(shown.html).toContain("The old link no longer works.");
    const code = /\/claim\/(claim-[a-z0-9]+)/.exec(shown.html)![1]!;
    expect(code).not.toBe(invite.code);
    expect((await new PageClient(s.url).get(`/claim/${invite.code}`)).status).toBe(404);
    expect((await new PageClient(s.url).get(`/claim/${code}`)).status).toBe(200);
  });
});

describe("looking up claim links on the page", () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ publicRateLimit: 5 });
  });
  afterAll(() => limited.stop());

  test("GET /claim/{code} counts against the address like a form: past the limit, 429 with Retry-After", async () => {
    const b = new PageClient(limited.url);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await b.get(`/claim/claim-${"x".repeat(19)}${i}`)).status);
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429]);
    const over = await b.get("/claim/claim-anything");
    expect(over.headers.get("retry-after")).not.toBeNull();
    limited.clock.advance(MINUTE);
    expect((await b.get("/claim/claim-anything")).status).toBe(404);
  });
});
