// Among instances on one database with one writer (--peer-secret), the others write nothing of their own: the jobs
// and the instance's heartbeat run on the writer alone, and their clients' last use is handed to the writer, which
// writes it with its own; a web page or OAuth request that must write is handed to the writer whole. (sqld livelocks
// with three or more writing clients: only the writer may be one.)
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { type Sqld, startSqld } from "../sqld.ts";

const SECRET = "one-writer-test-secret-0123456789";
const METRICS = "one-writer-metrics-token";
let sqld: Sqld;
let writer: TestServer;
let other: TestServer;

beforeAll(async () => {
  sqld = await startSqld();
  // The first to start takes the writer lease; the second finds it held.
  writer = await startTestServer({ dbUrl: sqld.url, peer: { secret: SECRET } });
  other = await startTestServer({ dbUrl: sqld.url, peer: { secret: SECRET }, metricsToken: METRICS });
}, 60_000);

afterAll(async () => {
  await other?.stop();
  await writer?.stop();
  await sqld?.stop();
});

async function primary(sql: string, args: (string | number)[] = []): Promise<Record<string, unknown>[]> {
  const client = createClient({ url: sqld.url });
  try {
    return (await client.execute({ sql, args })).rows as unknown as Record<string, unknown>[];
  } finally {
    client.close();
  }
}

test("the first instance holds the writer lease; both are ready", async () => {
  const [lease] = await primary("SELECT url FROM writer_lease WHERE id = 1");
  expect(lease!.url).toBe(writer.url);
  for (const s of [writer, other]) expect(await (await s.raw("/readyz")).json()).toMatchObject({ ready: true });
});

test("jobs and the heartbeat run on the writer alone", async () => {
  expect(await other.server.jobs.runDue()).toEqual([]);
  const ran = await writer.server.jobs.runDue();
  expect(ran.length).toBeGreaterThan(0);
  expect(ran.filter((o) => o.error)).toEqual([]);
  const rows = await primary("SELECT instance_id FROM instances");
  expect(rows.map((r) => r.instance_id)).toEqual([writer.server.jobs.instanceId]);
});

test("a write handed to the writer answers with the caller's inbox summary as committed", async () => {
  const a = await other.ok("register_agent", { handle: "ow-summary-a", display_name: "A" });
  const b = await other.ok("register_agent", { handle: "ow-summary-b", display_name: "B" });
  await other.ok("add_contact", { handle: "ow-summary-a", idempotency_key: "ow-summary-1" }, b.api_key);
  // A's request from B is in A's inbox; A's own write answers with it counted.
  const { inbox } = await other.ok("update_me", { display_name: "A again", idempotency_key: "ow-summary-2" }, a.api_key);
  expect(inbox.unread).toBeGreaterThan(0);
  expect(inbox.top.join("\n")).toContain("ow-summary-b");
});

test("a client's last use noted on another instance is written by the writer, never by that instance", async () => {
  const reg = await other.ok("register_agent", { handle: "ow-reader", display_name: "Reader" });
  const clientId = (await primary("SELECT client_id FROM clients WHERE agent_id = ?", [reg.agent.agent_id]))[0]!.client_id as string;
  await other.ok("get_me", {}, reg.api_key);
  // Handed over: nothing written yet
  expect(await other.server.lastUse.flush()).toBe(1);
  expect((await primary("SELECT last_used_at FROM clients WHERE client_id = ?", [clientId]))[0]!.last_used_at).toBeNull();
  // The writer writes it with its own batch, at the time the other instance saw the call.
  expect(await writer.server.lastUse.flush()).toBeGreaterThanOrEqual(1);
  expect((await primary("SELECT last_used_at FROM clients WHERE client_id = ?", [clientId]))[0]!.last_used_at).toBe(other.clock.now().toISOString());
});

test("the writer takes last uses only from an instance that knows the secret", async () => {
  const res = await fetch(`${writer.url}/internal/peer/last-use`, {
    method: "POST",
    headers: { authorization: "Bearer not-the-secret-at-all", "content-type": "application/json" },
    body: JSON.stringify([["some-client", new Date().toISOString()]]),
  });
  expect(res.status).toBe(403);
  const bad = await fetch(`${writer.url}/internal/peer/last-use`, {
    method: "POST",
    headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json" },
    body: JSON.stringify([["some-client", "yesterday"]]),
  });
  expect(bad.status).toBe(400);
});

/** Write transactions the instance has run so far, by its metrics. */
async function writesOf(s: TestServer): Promise<number> {
  const text = await (await s.raw("/metrics", { headers: { authorization: `Bearer ${METRICS}` } })).text();
  const line = text.split("\n").find((l) => l.startsWith('svc_db_transaction_seconds_count{kind="write"} '));
  return line ? Number(line.split(" ")[1]) : 0;
}

test("a person signs up, out and in on the web through the instance that does not write: the writer answers, that instance writes nothing", async () => {
  const before = await writesOf(other);
  const b = new PageClient(other.url);
  await b.get("/signup");
  const signedUp = await b.post("/signup", { handle: "ow-person", display_name: "Person", method: "password", password: "correct horse battery staple" });
  expect(signedUp.location).toBe("/account");
  // Read here, with the session the writer made
  expect((await b.get("/account")).html).toContain("Signed in as <strong>@ow-person</strong>");
  expect(await primary("SELECT handle FROM agents WHERE handle = ?", ["ow-person"])).toHaveLength(1);
  await b.follow(await b.post("/account/signout", { flow: "account" }));
  expect((await b.get("/account")).html).not.toContain("Signed in as");
  await b.get("/signin");
  expect((await b.post("/signin/password", { handle: "ow-person", password: "correct horse battery staple" })).location).toBe("/account");
  expect((await b.get("/account")).html).toContain("Signed in as <strong>@ow-person</strong>");
  expect(await writesOf(other)).toBe(before);
});
