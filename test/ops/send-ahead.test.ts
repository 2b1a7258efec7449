// A write tool's first statements sent with its authentication (server/tools/invoke.ts runAhead, db/connections.ts
// sendAhead), against sqld: they answer only once the gate opens, nothing is written before it does, and a call
// whose credential is no longer what it was seen to be runs as if nothing had been sent ahead.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { type Db, Gate, openDb, remoteRequests, remoteStatements, sendAhead } from "../../db/client.ts";
import { createClient, issueApiKey } from "../../server/auth/credentials.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { numbersOn, type Sqld, startSqld } from "../sqld.ts";

let sqld: Sqld;
let db: Db;
let s: TestServer;
beforeAll(async () => {
  sqld = await startSqld();
  db = await openDb({ url: sqld.url });
  await db.exclusive((c) => c.execute("CREATE TABLE ahead (n INTEGER)"));
  s = await startTestServer({ dbUrl: sqld.url });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await db?.close();
  await sqld?.stop();
});

const onPrimary = () => numbersOn(sqld, "ahead");

test("a read sent ahead goes out at once and answers once its gate opens; a write waits for the gate to be sent", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM ahead"));
  await db.tx(async (tx) => {
    const g = new Gate();
    const ahead = sendAhead(tx, g)!;
    expect(ahead).toBeDefined();
    let answered = false;
    const read = ahead.values(sql`SELECT 7`).then((rows) => ((answered = true), rows));
    const requests = remoteRequests.write;
    // The read went to the primary (in the transaction's first request) without waiting for the gate ...
    while (remoteRequests.write === requests) await Bun.sleep(1);
    // ... and its answer waits for it, as does a write, which is not sent at all before it opens.
    const wrote = ahead.run(sql`INSERT INTO ahead VALUES (1)`);
    await tx.values(sql`SELECT 1`);
    expect(answered).toBe(false);
    g.open();
    expect(await read).toEqual([[7]]);
    await wrote;
  });
  expect(await onPrimary()).toEqual([1]);
});

test("once a gate is refused, nothing more of its handle is sent, and what waited fails; the transaction goes on without it", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM ahead"));
  await db.tx(async (tx) => {
    const g = new Gate();
    const ahead = sendAhead(tx, g)!;
    const read = (async () => await ahead.values(sql`SELECT count(*) FROM ahead`))();
    const wrote = (async () => await ahead.run(sql`INSERT INTO ahead VALUES (1)`))();
    read.catch(() => undefined);
    wrote.catch(() => undefined);
    g.refuse();
    await expect(read).rejects.toThrow();
    await expect(wrote).rejects.toThrow();
    await expect((async () => await ahead.run(sql`INSERT INTO ahead VALUES (2)`))()).rejects.toThrow();
    await tx.run(sql`INSERT INTO ahead VALUES (3)`);
  });
  expect(await onPrimary()).toEqual([3]);
});

test("a dropped run that goes on issuing statements sends none, even once another call's go ahead", async () => {
  await db.exclusive((c) => c.execute("DELETE FROM ahead"));
  await db.tx(async (tx) => {
    const first = new Gate();
    const dropped = sendAhead(tx, first)!;
    first.refuse();
    const second = new Gate();
    const next = sendAhead(tx, second)!;
    second.open();
    // The dropped run writes after the next call's gate opened (it caught its failure and went on): refused.
    await expect((async () => await dropped.run(sql`INSERT INTO ahead VALUES (9)`))()).rejects.toThrow();
    await next.run(sql`INSERT INTO ahead VALUES (4)`);
  });
  expect(await onPrimary()).toEqual([4]);
});

test("a write by a credential seen before goes in 2 requests to the primary; a changed, revoked or replayed one runs as it should", async () => {
  const [alice, bob] = await s.contacts("ahead-alice", "ahead-bob");
  const { group } = await s.ok("create_group", { name: "Ahead", currency: "EUR", members: [bob.handle] }, alice.key);
  const add = (n: number, key = alice.key, idem = `ahead-${n}-${crypto.randomUUID()}`) =>
    s.call("add_expense", { group_id: group.group_id, description: `Ahead ${n}`, amount_minor: 1000 + n, idempotency_key: idem }, key);
  expect((await add(1)).status).toBe(200);
  // Seen: the tool's first reads go with the authentication and the key's record.
  const before = remoteRequests.write;
  expect((await add(2)).status).toBe(200);
  expect(remoteRequests.write - before).toBe(2);
  // The same key again: the stored answer, one expense.
  const first = await add(3, alice.key, "ahead-replayed-key");
  const again = await add(3, alice.key, "ahead-replayed-key");
  expect(again.headers.get("idempotent-replayed")).toBe("true");
  expect(again.body.data.expense.expense_id).toBe(first.body.data.expense.expense_id);
  // The principal changed since it was seen (its display name): the call runs, as the new one.
  await s.ok("update_me", { display_name: "Alice Renamed" }, alice.key);
  expect((await add(4)).status).toBe(200);
  // A key revoked since it was seen: refused, and nothing of the call is written.
  const now = s.clock.now();
  const second = await s.server.db.tx(async (tx) => issueApiKey(tx, await createClient(tx, alice.agent_id, "second", "api_key", now, { maxKeys: 10 }), now));
  expect((await add(5, second)).status).toBe(200);
  const client = (await s.ok("list_clients", {}, alice.key)).clients.find((c: { current: boolean }) => !c.current);
  await s.ok("disconnect_client", { client_id: client.client_id }, alice.key);
  const refused = await add(6, second);
  expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 401, code: "UNAUTHENTICATED" });
  const { expenses } = await s.ok("list_expenses", { group_id: group.group_id, limit: 50 }, alice.key);
  expect(expenses.map((e: { description: { untrusted_content: string } }) => e.description.untrusted_content).sort()).toEqual([
    "Ahead 1",
    "Ahead 2",
    "Ahead 3",
    "Ahead 4",
    "Ahead 5",
  ]);
});

test("an expense its caller pays, split among members who joined, goes in 2 requests too: the limits' reads go with the first", async () => {
  const [carol, dan, erin] = await s.contacts("ahead-carol", "ahead-dan", "ahead-erin");
  const { group } = await s.ok("create_group", { name: "Joined", currency: "EUR" }, carol.key);
  const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 5 }, carol.key);
  for (const m of [dan, erin]) await s.ok("join_group", { invite_code: invite.code }, m.key);
  let statements = 0;
  const requestsOf = async (key: string, args: Record<string, unknown>) => {
    const [before, beforeStatements] = [remoteRequests.write, remoteStatements.write];
    await s.ok("add_expense", { group_id: group.group_id, description: "Joined", amount_minor: 900, ...args }, key);
    statements = remoteStatements.write - beforeStatements;
    return remoteRequests.write - before;
  };
  await requestsOf(carol.key, {});
  await requestsOf(dan.key, {});
  expect(await requestsOf(carol.key, {})).toBe(2);
  expect(await requestsOf(dan.key, {})).toBe(2);
  const paidAlone = statements;
  // Paid by another: a pair without the caller in it (dan owes carol); the check reads what it needs on its own, and
  // the two reads ahead are not made (the same number of statements: those two for the check's own two).
  expect(await requestsOf(erin.key, { paid_by: [{ handle: carol.handle, amount_minor: 900 }] })).toBe(3);
  expect(statements).toBe(paidAlone);
  // Five expenses of 900, 300 a head: carol paid three, dan two.
  const { members } = await s.ok("get_balances", { group_id: group.group_id }, carol.key);
  const nets = Object.fromEntries(members.map((m: { agent: { handle: string }; balance_minor: number }) => [m.agent.handle, m.balance_minor]));
  expect(nets).toEqual({ [carol.handle]: 1200, [dan.handle]: 300, [erin.handle]: -1500 });
});
