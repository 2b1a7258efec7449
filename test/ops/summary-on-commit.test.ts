// On a remote primary a write's inbox summary is read with its COMMIT, in the same request (db/query.ts getOnCommit,
// server/domain/inbox.ts summaryOnCommit): it must be the summary a read transaction gives just after, whatever the
// inbox holds (asks alone, a group's expenses to confirm summed up under its name, news).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { remoteStatements } from "../../db/client.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { type Sqld, startSqld } from "../sqld.ts";

let sqld: Sqld;
let s: TestServer;
beforeAll(async () => {
  sqld = await startSqld();
  s = await startTestServer({ dbUrl: sqld.url });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await sqld?.stop();
});

/** Bob's write answers with the summary a read gives right after, and reads nothing after its COMMIT to give it. */
async function sameAsRead(bobKey: string, n: number) {
  // Statements, not requests: the COMMIT of an earlier read transaction may still go out alone meanwhile (endRead).
  const reads = remoteStatements.read;
  const { inbox: written } = await s.ok("update_me", { display_name: `Bob ${n}` }, bobKey);
  expect(remoteStatements.read - reads).toBe(0);
  const { inbox: read } = await s.ok("get_me", {}, bobKey);
  expect(written).toEqual(read);
  return written;
}

test("a write's summary read with its COMMIT is the summary read after it: empty, asks, a group's expenses to confirm, news", async () => {
  const [alice, bob, carol] = await s.contacts("soc-alice", "soc-bob", "soc-carol");
  await s.ok("get_inbox", { limit: 100 }, bob.key);
  expect(await sameAsRead(bob.key, 1)).toEqual({ unread: 0, requires_action: 0, top: [] });
  const { group } = await s.ok("create_group", { name: "Lisbon", currency: "EUR" }, alice.key);
  const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 2 }, alice.key);
  for (const m of [bob, carol]) await s.ok("join_group", { invite_code: invite.code }, m.key);
  await s.ok("get_inbox", { limit: 100 }, bob.key);
  for (let i = 0; i < 4; i++) await s.ok("add_expense", { group_id: group.group_id, description: `Dinner ${i}`, amount_minor: 1000 + i }, alice.key);
  const summed = await sameAsRead(bob.key, 2);
  expect(summed.requires_action).toBeGreaterThanOrEqual(4);
  expect(summed.top.join("\n")).toContain("4 expenses in “Lisbon” (quoted) to confirm");
  // An ask of another kind beside them, then news alone once the asks are answered.
  const dave = await s.ok("register_agent", { handle: "soc-dave", display_name: "Dave" });
  await s.ok("add_contact", { handle: bob.handle }, dave.api_key);
  const mixed = await sameAsRead(bob.key, 3);
  expect(mixed.top.join("\n")).toContain("soc-dave");
  const { items } = await s.ok("get_inbox", { requires_action: true, limit: 100 }, bob.key);
  const expenses = items.filter((i: { refs: { expense_id?: string } }) => i.refs.expense_id).map((i: { refs: { expense_id: string } }) => i.refs.expense_id);
  await s.ok("respond_expense", { expense_ids: expenses, action: "confirm" }, bob.key);
  await s.ok("respond_contact_request", { handle: "soc-dave", action: "decline" }, bob.key);
  await sameAsRead(bob.key, 4);
});
