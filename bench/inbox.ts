// Authenticated get_inbox (an agent with 50 items) against a bare Bun.serve hello-world, same load generator, from
// svc serve in one process (--workers 1) and in two (--workers 2, the default on 2 cores: a second process for
// reads); and the cursor poll's statements alone in a bare handler (bench/poll-floor.ts): svc's own cost per call.
// Run: bun run bench/inbox.ts [seconds] [rounds]
import { spawn } from "bun";
import { ensureWrk, fmt, startSvc, tool, waitFor, wrk } from "./load.ts";

const seconds = Number(process.argv[2] ?? 6);
const rounds = Number(process.argv[3] ?? 3);
const pct = (ratio: number) => `${(100 * ratio).toFixed(1)}%`;
ensureWrk();
const svc = await startSvc(18787, ["--workers", "1"]);
const svc2 = await startSvc(18786, ["--workers", "2"]);
const helloProc = spawn(["bun", "run", "bench/hello.ts", "18788"], { stdout: "ignore", stderr: "inherit" });
await waitFor("http://127.0.0.1:18788/");

/** The reader with 50 items in its inbox, one from each of 50 senders; the headers of its calls. */
async function reader(url: string): Promise<Record<string, string>> {
  const me = await tool(url, "register_agent", { handle: "bench-reader", display_name: "Reader" });
  for (let i = 0; i < 50; i++) {
    const other = await tool(url, "register_agent", { handle: `bench-sender-${i}`, display_name: `Sender ${i}` });
    await tool(url, "add_contact", { handle: "bench-reader", note: `hello ${i}`, idempotency_key: `bench-add-${i}` }, other.api_key);
  }
  return { authorization: `Bearer ${me.api_key}`, "content-type": "application/json" };
}

try {
  const auth = await reader(svc.url);
  const auth2 = await reader(svc2.url);
  // Both seen once, so every later poll finds nothing new.
  for (const [url, headers] of [
    [svc.url, auth],
    [svc2.url, auth2],
  ] as const)
    await fetch(`${url}/v1/tools/get_inbox`, { method: "POST", headers, body: "{}" });
  console.log(`svc get_inbox benchmark: 64 connections, ${seconds} s each, wrk on loopback, 2 cores shared with the load generator`);
  console.log(`${rounds} rounds, each between two hello-world runs (the machine's speed drifts within minutes)\n`);
  // The same poll's statements alone, on this database, in a bare handler: the floor svc stands on.
  const floorProc = spawn(["bun", "run", "bench/poll-floor.ts", "18789", `${svc.dir}/svc.db`], { stdout: "ignore", stderr: "inherit" });
  try {
    await waitFor("http://127.0.0.1:18789/", 15_000, { method: "POST", headers: auth, body: "{}" });
    const hello = () => wrk("http://127.0.0.1:18788/", { seconds });
    const ratios: { all: number; cursor: number; workers: number; floor: number }[] = [];
    const workersRps: number[] = [];
    let before = hello();
    console.log(`hello-world (Bun.serve)                 ${fmt(before)}`);
    for (let round = 1; round <= rounds; round++) {
      const all = wrk(`${svc.url}/v1/tools/get_inbox`, { seconds, headers: auth, body: JSON.stringify({ since: "0", include_seen: true, limit: 50 }) });
      console.log(`get_inbox, all 50 items (since=0)       ${fmt(all)}`);
      const fresh = wrk(`${svc.url}/v1/tools/get_inbox`, { seconds, headers: auth, body: "{}" });
      console.log(`get_inbox, from the client's cursor     ${fmt(fresh)}`);
      const two = wrk(`${svc2.url}/v1/tools/get_inbox`, { seconds, headers: auth2, body: "{}" });
      console.log(`  the same, svc serve --workers 2       ${fmt(two)}`);
      workersRps.push(two.rps);
      const floor = wrk("http://127.0.0.1:18789/", { seconds, headers: auth, body: "{}" });
      console.log(`the poll's SQL alone (poll-floor.ts)    ${fmt(floor)}`);
      const after = hello();
      console.log(`hello-world (Bun.serve)                 ${fmt(after)}`);
      const base = (before.rps + after.rps) / 2;
      const r = { all: all.rps / base, cursor: fresh.rps / base, workers: two.rps / base, floor: floor.rps / base };
      ratios.push(r);
      console.log(
        `  round ${round}: cursor ${pct(r.cursor)} (--workers 2: ${pct(r.workers)}), all 50 items ${pct(r.all)}, SQL alone ${pct(r.floor)} of the hello-world around them\n`,
      );
      before = after;
    }
    const median = (k: keyof (typeof ratios)[number]) => pct(ratios.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!);
    console.log(`median of ${rounds} rounds, each against the mean of the hello-world runs before and after it:`);
    console.log(`ratio get_inbox(50 items) / hello-world: ${median("all")}`);
    console.log(`ratio get_inbox(cursor)   / hello-world: ${median("cursor")} one process, ${median("workers")} with --workers 2 (target >= 12%)`);
    console.log(`ratio poll's SQL alone    / hello-world: ${median("floor")} (no svc around it: the floor on this machine)`);
    // The fair measure for --workers 2: the hello-world in two processes too (wrk has the other core either way).
    const hellos = [0, 1].map(() => spawn(["bun", "run", "bench/hello.ts", "18785"], { stdout: "ignore", stderr: "inherit" }));
    try {
      await waitFor("http://127.0.0.1:18785/");
      await Bun.sleep(300);
      const two = wrk("http://127.0.0.1:18785/", { seconds });
      console.log(`\nhello-world, two processes on one port   ${fmt(two)}`);
      const polls = workersRps.sort((a, b) => a - b)[Math.floor(workersRps.length / 2)]!;
      console.log(`ratio get_inbox(cursor, --workers 2, median) / two-process hello-world: ${pct(polls / two.rps)}`);
    } finally {
      for (const h of hellos) h.kill();
    }
  } finally {
    floorProc.kill();
  }
} finally {
  svc.proc.kill();
  svc2.proc.kill();
  helloProc.kill();
}
