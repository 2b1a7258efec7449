// Background jobs with the injectable clock: run once, advance, run again; effects checked over HTTP.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { scalar } from "../../db/client.ts";
import { inboxItems, jobLeases, platformInvites } from "../../db/schema/index.ts";
import { DAY, MINUTE } from "../../server/clock.ts";
import { deliver } from "../../server/domain/inbox.ts";
import { createPlatformInvite } from "../../server/domain/platform-invites.ts";
import type { Job } from "../../server/jobs/index.ts";
import { JOBS } from "../../server/jobs/index.ts";
import { JobRunner, LEASE_MS } from "../../server/jobs/runner.ts";
import { startTestServer, type TestServer } from "../harness.ts";

const METRICS_TOKEN = "metrics-token-for-jobs";
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ metricsToken: METRICS_TOKEN });
});
afterAll(() => s.stop());

const run = async () => Object.fromEntries((await s.server.jobs.runDue()).map((o) => [o.job, o.error ?? o.count]));
const metric = async (line: string) => {
  const text = await (await s.raw("/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
};
const storedItems = (agentId: string) =>
  s.server.db.tx(async (tx) => (await tx.select({ n: sql<number>`count(*)` }).from(inboxItems).where(eq(inboxItems.agentId, agentId)).get())!.n);
/** Past every job's interval, so the next run takes them all. */
const nextRound = () => s.clock.advance(61 * MINUTE);

describe("background jobs", () => {
  test("every job is listed once, runs on the first call, and not again before its interval", async () => {
    expect(new Set(JOBS.map((j) => j.name)).size).toBe(JOBS.length);
    for (const name of ["expire_inbox_items", "expire_idempotency_records", "expire_api_keys", "expire_platform_invites"]) {
      expect(JOBS.map((j) => j.name)).toContain(name);
    }
    nextRound();
    const first = await run();
    expect(Object.keys(first).sort()).toEqual(JOBS.map((j) => j.name).sort());
    expect(await run()).toEqual({});
  });

  test("inbox items are deleted after 30 days; a kept envelope stays a year; a second run removes nothing more", async () => {
    const [a, b] = await s.contacts("job-in-a", "job-in-b");
    const envelopeId = await s.server.db.tx((tx) =>
      deliver(tx, s.clock.now(), { to: b.agent_id, type: "mail.envelope", from: a.agent_id, summaryMd: "An envelope" }),
    );
    await s.ok("ack_inbox", { item_ids: [envelopeId], action: "keep" }, b.key);
    const before = await storedItems(b.agent_id);
    expect(before).toBeGreaterThan(1);
    const unreadBefore = (await metric('svc_inbox_items{state="unread"}'))!;

    s.clock.advance(29 * DAY);
    nextRound();
    await run();
    expect(await storedItems(b.agent_id)).toBe(before);

    s.clock.advance(2 * DAY);
    nextRound();
    const removed = (await run()).expire_inbox_items as number;
    expect(removed).toBeGreaterThanOrEqual(before - 1);
    expect(await storedItems(b.agent_id)).toBe(1);
    const inbox = await s.ok("get_inbox", { since: "0", include_seen: true }, b.key);
    expect(inbox.items.map((i: any) => i.item_id)).toEqual([envelopeId]);
    expect(await metric('svc_job_rows_total{job="expire_inbox_items"}')).toBeGreaterThanOrEqual(removed);
    expect((await metric('svc_inbox_items{state="unread"}'))!).toBeLessThan(unreadBefore);

    nextRound();
    expect((await run()).expire_inbox_items).toBe(0);

    s.clock.advance(365 * DAY);
    nextRound();
    expect((await run()).expire_inbox_items).toBeGreaterThanOrEqual(1);
    expect((await s.ok("get_inbox", { since: "0", include_seen: true }, b.key)).items).toEqual([]);
  });

  test("an idempotency key is remembered for 24 hours, then forgotten by the job", async () => {
    const a = await s.register("job-idem");
    const key = "job-idem-key-1";
    await s.ok("update_me", { display_name: "First", idempotency_key: key }, a.key);
    const reuse = () => s.call("update_me", { display_name: "Second", idempotency_key: key }, a.key);
    expect((await reuse()).body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");

    s.clock.advance(DAY + MINUTE);
    expect((await reuse()).body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    nextRound();
    expect((await run()).expire_idempotency_records).toBeGreaterThanOrEqual(1);
    const again = await reuse();
    expect(again.status).toBe(200);
    expect(again.body.data.agent.display_name).toBe("Second");
  });

  test("a rotated API key is deleted after its grace; the new key keeps working", async () => {
    const a = await s.register("job-keys");
    nextRound();
    const { api_key: fresh } = await s.ok("rotate_api_key", {}, a.key);
    const keysOfClient = () =>
      s.server.db.read((tx) => scalar(tx, sql`SELECT count(*) FROM api_keys JOIN clients USING (client_id) WHERE agent_id = ${a.agent_id}`));
    expect((await run()).expire_api_keys).toBe(0);
    expect((await s.call("get_me", {}, a.key)).status).toBe(200);
    expect(await keysOfClient()).toBe(2);

    nextRound();
    expect((await run()).expire_api_keys).toBe(1);
    expect(await keysOfClient()).toBe(1);
    expect((await s.call("get_me", {}, a.key)).status).toBe(401);
    expect((await s.call("get_me", {}, fresh)).status).toBe(200);
    expect(await metric('svc_job_rows_total{job="expire_api_keys"}')).toBeGreaterThanOrEqual(1);
    nextRound();
    expect((await run()).expire_api_keys).toBe(0);
  });

  test("expired platform invites are deleted; open-ended and live ones stay", async () => {
    const now = s.clock.now();
    const [soon, never] = await s.server.db.tx(async (tx) => [
      await createPlatformInvite(tx, now, { uses: 1, expiresAt: new Date(now.getTime() + DAY).toISOString(), note: null }),
      await createPlatformInvite(tx, now, { uses: 1, expiresAt: null, note: null }),
    ]);
    const codes = () => s.server.db.tx(async (tx) => (await tx.select({ code: platformInvites.code }).from(platformInvites)).map((r) => r.code));
    nextRound();
    await run();
    expect(await codes()).toEqual(expect.arrayContaining([soon, never]));
    s.clock.advance(DAY);
    nextRound();
    expect((await run()).expire_platform_invites).toBe(1);
    expect(await codes()).toContain(never);
    expect(await codes()).not.toContain(soon);
  });
});

describe("the lease: one instance at a time", () => {
  const counting = (name: string, counter: { n: number }, fail = false): Job => ({
    name,
    everyMs: MINUTE,
    async run() {
      counter.n++;
      if (fail) throw new Error("job broke");
      return 1;
    },
  });

  test("a second instance on the same database does not run a job the first just ran", async () => {
    const counter = { n: 0 };
    const job = counting("lease_test_once", counter);
    const one = new JobRunner(s.server.db, s.clock, [job]);
    const two = new JobRunner(s.server.db, s.clock, [job]);
    expect((await one.runDue()).map((o) => o.job)).toEqual(["lease_test_once"]);
    expect(await two.runDue()).toEqual([]);
    s.clock.advance(MINUTE);
    expect((await two.runDue()).map((o) => o.job)).toEqual(["lease_test_once"]);
    expect(await one.runDue()).toEqual([]);
    expect(counter.n).toBe(2);
  });

  test("a lease held by another instance is respected until it expires", async () => {
    const counter = { n: 0 };
    const job = counting("lease_test_held", counter);
    const now = s.clock.now();
    await s.server.db.tx((tx) =>
      tx.insert(jobLeases).values({ name: job.name, holder: "another-instance", leaseUntil: new Date(now.getTime() + LEASE_MS).toISOString(), nextRunAt: "" }),
    );
    const runner = new JobRunner(s.server.db, s.clock, [job]);
    expect(await runner.runDue()).toEqual([]);
    s.clock.advance(LEASE_MS);
    expect((await runner.runDue()).map((o) => o.count)).toEqual([1]);
    expect(counter.n).toBe(1);
  });

  test("a failing job reports its error and is retried only after the lease runs out", async () => {
    const counter = { n: 0 };
    const runner = new JobRunner(s.server.db, s.clock, [counting("lease_test_failing", counter, true)]);
    const [outcome] = await runner.runDue();
    expect((outcome!.error as Error).message).toBe("job broke");
    // A run that fails is judged again once on an embedded replica, after a sync (db/database.ts): 1 or 2 tries.
    const tries = counter.n;
    expect(tries).toBeGreaterThanOrEqual(1);
    s.clock.advance(LEASE_MS - MINUTE);
    expect(await runner.runDue()).toEqual([]);
    expect(counter.n).toBe(tries);
    s.clock.advance(MINUTE);
    expect(await runner.runDue()).toHaveLength(1);
    expect(counter.n).toBe(2 * tries);
  });
});
