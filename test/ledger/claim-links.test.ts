// A placeholder's claim link works for 30 days (its invite's expires_at says until when); an expired one says how to
// get a new one, which the member who added the placeholder or the group's owner makes (create_group_invite with
// member_id), ending the old; and looking links up on the page is limited per address (docs/security.md, "Limits").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DAY, MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
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
