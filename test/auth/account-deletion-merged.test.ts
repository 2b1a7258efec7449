// Deleting an account whose person once joined a second handle into it (a handle made twice, through the identity
// provider): the joined handle was the same person's and goes the same way; their provider logins go too.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Agent, TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { startServerWithProvider, type ServerWithProvider } from "./oidc-helpers.ts";
import { leftovers, rawRows } from "./schema-leftovers.ts";

let world: ServerWithProvider;
let s: TestServer;
beforeAll(async () => {
  // Every login shares one verified e-mail: the two handles are the same person's.
  world = await startServerWithProvider(() => ({ email: "lee@example.org", email_verified: true }));
  s = world.s;
});
afterAll(() => world.stop());

/** Registers `handle`, links the provider login `login` to it, and leaves the browser signed in with the provider's proof. */
async function linkedHandle(handle: string, login: string): Promise<{ agent: Agent; b: PageClient }> {
  const agent = await s.register(handle);
  const b = new PageClient(s.url);
  await b.get("/account");
  await world.providerSignIn(b, "/account/oidc/start?flow=account", login);
  expect((await signInWithCode(s, b, "account", handle, agent.key)).html).toContain(`Signed in as <strong>@${handle}</strong>`);
  return { agent, b };
}

test("the handles joined into the deleted one are wiped with it, their provider logins too", async () => {
  const main = await linkedHandle("lee-main", "lee-a");
  const dup = await linkedHandle("lee-dup", "lee-b");
  const friend = await s.register("lee-friend");
  await s.ok("add_contact", { handle: "lee-dup" }, friend.key);
  await s.ok("respond_contact_request", { handle: "lee-friend", action: "accept" }, dup.agent.key);
  await s.ok("send_envelope", { to: ["lee-friend"], subject: "Hi", body_md: "From the second handle" }, dup.agent.key);
  expect((await dup.b.post("/account/merge", { keep: "lee-main", retire: "lee-dup" })).status).toBe(200);
  const logins = await rawRows(s, sql`SELECT count(*) FROM oidc_identities WHERE agent_id = ${main.agent.agent_id}`);
  expect(logins).toEqual([[2]]);
  // What the joined handle still held after the join: its inbox, the mail its contact holds.
  expect((await leftovers(s, dup.agent.agent_id)).map((f) => f.table)).toContain("inbox_items");

  const b = new PageClient(s.url);
  await b.get("/account");
  await signInWithCode(s, b, "account", "lee-main", main.agent.key);
  await b.get("/account/delete");
  const done = await b.post("/account/delete", { confirm_handle: "lee-main" });
  expect(done.status).toBe(200);

  for (const id of [main.agent.agent_id, dup.agent.agent_id]) expect(await leftovers(s, id)).toEqual([]);
  expect(
    await rawRows(s, sql`SELECT handle, deleted_at IS NOT NULL, retired_at IS NOT NULL FROM agents WHERE handle IN ('lee-main', 'lee-dup') ORDER BY handle`),
  ).toEqual([
    ["lee-dup", 1, 1],
    ["lee-main", 1, 1],
  ]);
  // The mail the contact holds stays theirs.
  expect((await s.ok("list_envelopes", {}, friend.key)).envelopes.map((e: any) => e.from.handle)).toEqual(["lee-dup"]);
});
