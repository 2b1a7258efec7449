// The ledger under a realistic group: 20 members, 10,000 expenses. Prints median and p99 latency of get_balances
// and add_expense over HTTP, and add_expense throughput with 16 connections against a bare Bun.serve hello-world.
// Run: bun run bench/ledger.ts [expenses=10000] [svc serve flags, e.g. --workers 1; default: svc serve's own]
import { spawn } from "bun";
import { eq } from "drizzle-orm";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../db/client.ts";
import { groups } from "../db/schema/index.ts";
import { createExpense, newExpenseState } from "../server/domain/ledger/expenses/store.ts";
import { membersByHandle } from "../server/domain/ledger/groups/membership.ts";
import { UNLIMITED } from "../test/hardening/spawn-server.ts";
import { ensureWrk, fmt, tool, waitFor, wrk } from "./load.ts";

const EXPENSES = Number(process.argv[2] ?? 10_000);
const SERVE_FLAGS = process.argv.slice(3);
const MEMBERS = 20;
const LATENCY_CALLS = 300;
const SECONDS = 10;
const CONCURRENCY = 16;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const ms = (n: number) => `${n.toFixed(2)} ms`;

async function timed(calls: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}

// From source (not a possibly older bin/svc): this measures the code in the tree.
const dir = mkdtempSync(join(tmpdir(), "svc-bench-ledger-"));
const dbUrl = `file:${join(dir, "svc.db")}`;
const url = "http://127.0.0.1:18790";
const proc = spawn(["bun", "run", "cli/main.ts", "serve", "--port", "18790", "--db", dbUrl, ...UNLIMITED, ...SERVE_FLAGS], {
  stdout: "ignore",
  stderr: "inherit",
});
ensureWrk();
const helloProc = spawn(["bun", "run", "bench/hello.ts", "18789"], { stdout: "ignore", stderr: "inherit" });
await waitFor(`${url}/healthz`);
await waitFor("http://127.0.0.1:18789/");
const svc = { url, proc };
try {
  const members: { key: string; agentId: string; handle: string }[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    const r = await tool(svc.url, "register_agent", { handle: `bench-m${i}`, display_name: `Member ${i}` });
    members.push({ key: r.api_key as string, agentId: r.agent.agent_id as string, handle: `bench-m${i}` });
  }
  const owner = members[0]!;
  const { group } = await tool(svc.url, "create_group", { name: "Bench", currency: "EUR", idempotency_key: "bench-group" }, owner.key);
  const { invite } = await tool(svc.url, "create_group_invite", { group_id: group.group_id, max_uses: 100, idempotency_key: "bench-invite" }, owner.key);
  for (const m of members.slice(1)) await tool(svc.url, "join_group", { invite_code: invite.code, idempotency_key: `bench-join-${m.handle}` }, m.key);

  // Seeded through the domain (the same code add_expense runs, without inbox items) beside the idle server.
  const db = await openDb({ url: dbUrl });
  const seedStart = performance.now();
  const now = new Date();
  for (let done = 0; done < EXPENSES; ) {
    await db.tx(async (tx) => {
      const g = (await tx.select().from(groups).where(eq(groups.groupId, group.group_id)).get())!;
      const byHandle = await membersByHandle(tx, g.groupId);
      for (let i = 0; i < 500 && done < EXPENSES; i++, done++) {
        const payer = members[done % MEMBERS]!;
        const state = newExpenseState(g, byHandle, payer, { description: `Seeded ${done}`, amount_minor: 1000 + (done % 9000) }, now);
        await createExpense(tx, now, g, payer, state);
      }
    });
  }
  await db.close();
  console.log(
    `svc ledger benchmark: ${MEMBERS} members, ${EXPENSES} expenses (seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s), svc serve ${SERVE_FLAGS.join(" ") || "(its defaults)"} as a child process, loopback HTTP, 2 shared cores\n`,
  );

  const balances = await timed(LATENCY_CALLS, () => tool(svc.url, "get_balances", { group_id: group.group_id }, owner.key));
  console.log(`get_balances   median ${ms(pct(balances, 50))}   p99 ${ms(pct(balances, 99))}   (${LATENCY_CALLS} sequential calls)`);

  let n = 0;
  const add = () => {
    const payer = members[n % MEMBERS]!;
    return tool(
      svc.url,
      "add_expense",
      { group_id: group.group_id, description: `Bench ${n}`, amount: "12.34", idempotency_key: `bench-add-${n++}` },
      payer.key,
    );
  };
  const adds = await timed(LATENCY_CALLS, add);
  console.log(
    `add_expense    median ${ms(pct(adds, 50))}   p99 ${ms(pct(adds, 99))}   (${LATENCY_CALLS} sequential calls, equal split among ${MEMBERS}, 19 inbox items each)`,
  );

  // Throughput with 16 connections from wrk, each request a new expense by one of the members (its own idempotency
  // key), against a bare Bun.serve hello-world measured by the same load generator in the same run.
  const lua = `
local keys = { ${members.map((m) => JSON.stringify(m.key)).join(", ")} }
local threads = 0
function setup(thread) thread:set("id", threads); threads = threads + 1 end
local n = 0
function request()
  n = n + 1
  local body = string.format('{"group_id":"${group.group_id}","description":"wrk %d","amount":"12.34","idempotency_key":"wrk-expense-%d-%d"}', n, id, n)
  return wrk.format("POST", "/v1/tools/add_expense", { ["authorization"] = "Bearer " .. keys[(n % #keys) + 1], ["content-type"] = "application/json" }, body)
end
local shown = 0
function response(status, headers, body)
  if status ~= 200 and shown < 3 then shown = shown + 1; io.stderr:write(status .. " " .. body .. "\\n") end
end`;
  // Between two hello-world runs: the machine's speed drifts within minutes.
  const hello = () => wrk("http://127.0.0.1:18789/", { seconds: SECONDS });
  const before = hello();
  console.log(`hello-world    ${fmt(before)}   (Bun.serve, 64 connections, wrk)`);
  const throughput = wrk(`${svc.url}/v1/tools/add_expense`, { seconds: SECONDS, connections: CONCURRENCY, lua });
  console.log(`add_expense    ${fmt(throughput)}   (${CONCURRENCY} connections, wrk)`);
  const after = hello();
  console.log(`hello-world    ${fmt(after)}   (Bun.serve, 64 connections, wrk)`);

  const base = (before.rps + after.rps) / 2;
  console.log(`\nadd_expense / hello-world (the mean of the runs before and after): ${((100 * throughput.rps) / base).toFixed(2)}% (target >= 0.4%)`);
  console.log(`get_balances median: ${ms(pct(balances, 50))} (target <= 1 ms)`);
} finally {
  svc.proc.kill();
  helloProc.kill();
}
