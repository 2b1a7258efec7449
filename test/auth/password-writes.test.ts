// A password's argon2id hash or check (a quarter of a second and more) runs with no transaction open (an outside
// audit found sign-up, password sign-in and password change hashing inside the write transaction, holding the one
// writer: other writes' p90 went from 13 to 465 ms at one address's allowed pace). Observed through what the server
// already exposes: the duration of every database transaction, by kind, on /metrics.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { HOUR } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";

const TOKEN = "metrics-token-password-writes";
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ metricsToken: TOKEN });
});
afterAll(() => s.stop());

/** The write transactions so far, from /metrics: how many, and how many took at most `le` seconds. */
async function writes(le: number) {
  const text = await (await s.raw("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  const sample = (series: string) =>
    Number(
      text
        .split("\n")
        .find((l) => l.startsWith(`${series} `))
        ?.split(" ")[1] ?? 0,
    );
  return {
    count: sample('svc_db_transaction_seconds_count{kind="write"}'),
    within: sample(`svc_db_transaction_seconds_bucket{kind="write",le="${le}"}`),
  };
}

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

describe("hashing passwords never holds the writer", () => {
  test("sign-up, sign-in (right, wrong, unknown handle) and changing the password: no write transaction lasts half as long as a hash", async () => {
    // One hash on this machine, as the server makes it (Bun.password's argon2id at its default cost).
    const started = performance.now();
    await Bun.password.hash("a password to time the hash with", { algorithm: "argon2id" });
    const hashSeconds = (performance.now() - started) / 1000;
    // Half of it, so that a hash timed a little slower here than in the server still counts as slow.
    const le = BUCKETS.filter((b) => b <= hashSeconds / 2).at(-1)!;
    expect(le).toBeDefined();
    const before = await writes(le);

    const b = new PageClient(s.url);
    await b.get("/signup");
    expect((await b.post("/signup", { handle: "pw-hold", display_name: "Hold", method: "password", password: "a phrase to sign up with" })).location).toBe("/");
    await b.follow(await b.post("/account/signout", { flow: "account" }));
    await b.get("/signin");
    expect((await b.post("/signin/password", { handle: "pw-hold", password: "not the phrase" })).status).toBe(401);
    expect((await b.post("/signin/password", { handle: "pw-nobody-here", password: "not the phrase" })).status).toBe(401);
    expect((await b.post("/signin/password", { handle: "pw-hold", password: "a phrase to sign up with" })).location).toBe("/account");
    s.clock.advance(HOUR);
    await b.get("/account");
    expect((await b.post("/account/password", { current: "a phrase to sign up with", password: "a phrase changed later" })).html).toContain("Password saved.");
    // A browser signed in with a code sets the first password of a handle an agent made.
    const agent = await s.register("pw-hold-agent");
    const c = new PageClient(s.url);
    await c.get("/account");
    await signInWithCode(s, c, "account", agent.handle, agent.key);
    expect((await c.post("/account/password", { password: "a first phrase for the agent" })).html).toContain("Password saved.");

    const after = await writes(le);
    expect(after.count).toBeGreaterThan(before.count);
    // Seven hashes or checks were made, none inside a write transaction: no write took even half as long as one.
    expect(after.count - after.within - (before.count - before.within)).toBe(0);
  }, 60_000);

  test("wrong passwords sent at once are each counted before they are checked: no more than ten get through", async () => {
    const b = new PageClient(s.url);
    await b.get("/signup");
    await b.post("/signup", { handle: "pw-burst", display_name: "Burst", method: "password", password: "the burst phrase" });
    const guesser = new PageClient(s.url);
    await guesser.get("/signin");
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => guesser.post("/signin/password", { handle: "pw-burst", password: `wrong guess ${i}` })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((x) => x === 401).length).toBe(10);
    // The other two are refused: 429, or on a remote primary 503 when the count kept changing under the burst
    // (a guess that cannot be counted is not checked).
    expect(statuses.filter((x) => x !== 401).every((x) => x === 429 || x === 503)).toBe(true);
    expect(statuses.filter((x) => x === 429 || x === 503).length).toBe(2);
    expect((await guesser.post("/signin/password", { handle: "pw-burst", password: "the burst phrase" })).status).toBe(429);
    // A right password gives its guess back: the next hour starts clean, and signing in leaves the count as it was.
    s.clock.advance(HOUR);
    for (let i = 0; i < 11; i++) {
      await guesser.get("/signin");
      expect((await guesser.post("/signin/password", { handle: "pw-burst", password: "the burst phrase" })).location).toBe("/account");
    }
  }, 60_000);
});
