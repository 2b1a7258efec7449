// `svc federation rotate-key --now` run twice in a row, twice over: the receiver fetches the sender's keys again on
// each unknown kid within seconds, so mail keeps flowing (it used to wait up to a minute between such fetches, and
// the sender's doubling retries made that 69-91 s).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;
let alice: { key: string };
let bob: { key: string };
let bobOnA: string;

beforeAll(async () => {
  const started = await startServers(2);
  [A, B] = started.servers as [FedServer, FedServer];
  close = started.close;
  alice = await A.register("alice");
  bob = await B.register("bob");
  bobOnA = (await connect(A, alice, B, bob)).yOnX;
}, 60_000);
afterAll(() => close?.());

/** svc federation rotate-key --now on A's database while A runs, as an operator would; returns the new kid. */
async function rotateNow(): Promise<string> {
  const proc = Bun.spawn(["bun", "run", "cli/main.ts", "federation", "rotate-key", "--now", "--json", "--db", `file:${A.db}`], {
    cwd: `${import.meta.dir}/../..`,
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = await new Response(proc.stdout).text();
  expect(await proc.exited).toBe(0);
  return JSON.parse(out).kid;
}

const receivedBy = async () =>
  ((await B.ok("list_envelopes", { direction: "received" }, bob.key)).envelopes as any[]).map((e) => e.subject.untrusted_content as string);

/** Sends an envelope from alice to bob and waits until bob has it; resolves with the milliseconds that took. */
async function delivered(subject: string): Promise<number> {
  const started = Date.now();
  await A.ok("send_envelope", { to: [bobOnA], subject, body_md: "Signed with the newest key." }, alice.key);
  await until(receivedBy, (s) => s.includes(subject), 20_000);
  return Date.now() - started;
}

describe("rotate-key --now twice in a row", () => {
  test("each time, the next envelope from A reaches B within seconds", async () => {
    const kids = [await rotateNow(), await rotateNow()];
    expect(new Set(kids).size).toBe(2);
    // B meets the newest kid and fetches A's keys: the first fetch on an unknown kid.
    expect(await delivered("after two rotations")).toBeLessThan(15_000);
    // At once two more: another unknown kid a few seconds after that fetch is fetched too, at a retry of A's.
    kids.push(await rotateNow(), await rotateNow());
    expect(await delivered("after four rotations")).toBeLessThan(15_000);
    const published = (await (await fetch(`${A.url}/.well-known/svc-federation`)).json()).jwks.keys.map((k: any) => k.kid);
    expect(published).toEqual(expect.arrayContaining(kids));
  }, 45_000);
});
