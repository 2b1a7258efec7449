// A realistic mix at a fixed offered rate against `svc serve` as its own process: 70% get_inbox, 10% get_me,
// 10% add_expense, 5% add_contact/respond_contact_request, 5% send_envelope, from many agents. Prints throughput,
// p50/p99 latency (from each request's scheduled time, so a slow server cannot hide its queue), errors, the
// server's memory (RSS from /proc) over the run, and the database size per agent.
// Run: bun run bench/load-mix.ts [--agents 100000] [--active 2000] [--rate 400[,600,...]] [--seconds 120]
import { statSync, mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDb } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { DEFAULTS, type ServerConfig } from "../server/config.ts";
import { findTool } from "../server/tools/catalogue.ts";
import { registerAgent } from "../server/tools/identity/register-agent.ts";
import { spawnServer, type ServerProcess } from "../test/hardening/spawn-server.ts";
import { restCall } from "../test/hardening/transports.ts";
import { agreeToEverything, befriend, ok, restApi, type Api, type Member } from "../test/hardening/world.ts";

const { values: flags } = parseArgs({
  options: {
    agents: { type: "string", default: "100000" },
    active: { type: "string", default: "2000" },
    rate: { type: "string", default: "400" },
    seconds: { type: "string", default: "120" },
    help: { type: "boolean", short: "h" },
  },
});
if (flags.help) {
  console.log(`bun run bench/load-mix.ts [options]
  --agents N     agents seeded into the database before the server starts (default 100000)
  --active N     of them, agents paired over HTTP as contacts with a shared group (default 2000)
  --rate R[,R]   offered requests per second; several rates run one after another (default 400)
  --seconds S    seconds per rate (default 120)`);
  process.exit(0);
}
const AGENTS = Number(flags.agents);
const ACTIVE = Math.min(Number(flags.active), AGENTS) & ~1;
const RATES = flags.rate!.split(",").map(Number);
const SECONDS = Number(flags.seconds);
const MAX_IN_FLIGHT = 4096;

const dir = mkdtempSync(join(tmpdir(), "svc-load-"));
const dbPath = join(dir, "svc.db");
const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;
const dbBytes = () => ["", "-wal", "-shm"].reduce((n, s) => n + (existsSync(dbPath + s) ? statSync(dbPath + s).size : 0), 0);

/** Registers `count` agents straight into the database file with register_agent's own code: no HTTP, same rows. */
async function seed(count: number): Promise<Member[]> {
  const db = await openDb({ url: `file:${dbPath}` });
  await migrate(db.raw);
  const config = { inviteOnly: false, quotas: DEFAULTS.quotas } as ServerConfig;
  const members: Member[] = [];
  const started = performance.now();
  for (let from = 0; from < count; from += 2000) {
    await db.tx(async (tx) => {
      for (let i = from; i < Math.min(count, from + 2000); i++) {
        const handle = `load-${i}`;
        const d = await registerAgent.run({ tx, now: new Date(), config, requestId: "seed", actor: null }, { handle, display_name: `Load ${i}` });
        members.push({ key: d.api_key as string, handle, agent_id: (d.agent as { agent_id: string }).agent_id });
      }
    });
  }
  await db.close();
  console.log(
    `seeded ${count} agents directly into the database file (register_agent's code, no HTTP) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return members;
}

/** Runs `f` over `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, f: (t: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await f(items[next++]!);
    }),
  );
}

interface Pair {
  a: Member;
  b: Member;
  groupId?: string;
}

/** The active agents in pairs: contacts, and a group of two when groups exist; made over HTTP like real clients. */
async function relate(api: Api, active: Member[]): Promise<Pair[]> {
  const pairs: Pair[] = [];
  for (let i = 0; i < active.length; i += 2) pairs.push({ a: active[i]!, b: active[i + 1]! });
  const started = performance.now();
  await pool(pairs, 16, async (p) => {
    await befriend(api, p.a, p.b);
    if (!findTool("create_group")) return;
    p.groupId = (
      await ok(api, "create_group", { name: `Pair ${p.a.handle}`, currency: "EUR", members: [p.b.handle], idempotency_key: crypto.randomUUID() }, p.a.key)
    ).group.group_id;
    await agreeToEverything(api, p.b, new Map(), 1);
  });
  console.log(
    `related ${active.length} active agents in ${pairs.length} pairs (contacts${findTool("create_group") ? " and a shared group" : ""}) over HTTP in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return pairs;
}

type Op = "get_inbox" | "get_me" | "add_expense" | "contact" | "send_envelope";
const MIX: [Op, number][] = [
  ["get_inbox", 70],
  ["get_me", 10],
  ["add_expense", 10],
  ["contact", 5],
  ["send_envelope", 5],
];

function pick<T>(list: T[]): T {
  return list[Math.floor(Math.random() * list.length)]!;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

interface StageResult {
  rate: number;
  sent: number;
  done: number;
  shed: number;
  seconds: number;
  latencies: Map<string, number[]>;
  errors: Map<string, number>;
  rss: [number, number][];
}

// Agents past the active set, taken two at a time for contact requests between agents that never met (across stages).
let bulk = ACTIVE;

async function stage(server: ServerProcess, agents: Member[], pairs: Pair[], rate: number, seconds: number): Promise<StageResult> {
  const fallbacks = new Set<string>();
  const has = (tool: string) => findTool(tool) !== undefined || (fallbacks.add(tool), false);
  const pending: { from: Member; to: Member }[] = [];
  const request = (op: Op): { tool: string; args: Record<string, unknown>; key: string; after?: () => void } => {
    const key = crypto.randomUUID();
    if (op === "get_me") return { tool: "get_me", args: {}, key: pick(agents).key };
    if (op === "add_expense" && has("add_expense") && pairs[0]?.groupId) {
      const p = pick(pairs);
      return {
        tool: "add_expense",
        args: { group_id: p.groupId, description: "Lunch", amount: "12.34", idempotency_key: key },
        key: (Math.random() < 0.5 ? p.a : p.b).key,
      };
    }
    if (op === "send_envelope" && has("send_envelope")) {
      const p = pick(pairs);
      return { tool: "send_envelope", args: { to: [p.b.handle], subject: "Hello", body_md: "See you at **noon**.", idempotency_key: key }, key: p.a.key };
    }
    if (op === "contact") {
      const waiting = pending.length > 0 && Math.random() < 0.5 ? pending.shift() : undefined;
      if (waiting)
        return { tool: "respond_contact_request", args: { handle: waiting.from.handle, action: "accept", idempotency_key: key }, key: waiting.to.key };
      // each request between two agents of the bulk that have never met
      const from = agents[bulk++ % agents.length]!;
      const to = agents[bulk++ % agents.length]!;
      return { tool: "add_contact", args: { handle: to.handle, idempotency_key: key }, key: from.key, after: () => pending.push({ from, to }) };
    }
    return { tool: "get_inbox", args: {}, key: pick(agents).key };
  };
  const weights = MIX.reduce((n, [, w]) => n + w, 0);
  const chooseOp = (): Op => {
    let r = Math.random() * weights;
    for (const [op, w] of MIX) if ((r -= w) < 0) return op;
    return "get_inbox";
  };

  const latencies = new Map<string, number[]>();
  const errors = new Map<string, number>();
  const rss: [number, number][] = [[0, server.rssKiB()]];
  let sent = 0;
  let done = 0;
  let shed = 0;
  let inFlight = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  const inFlightDone: Promise<void>[] = [];
  let nextRss = started + 5000;
  while (performance.now() < end) {
    const now = performance.now();
    const due = Math.floor(((now - started) / 1000) * rate);
    while (sent < due) {
      const scheduled = started + (sent * 1000) / rate;
      sent++;
      if (inFlight >= MAX_IN_FLIGHT) {
        shed++;
        continue;
      }
      const r = request(chooseOp());
      inFlight++;
      inFlightDone.push(
        restCall(server.url, r.tool, r.key, { body: JSON.stringify(r.args) }, 30_000).then((o) => {
          inFlight--;
          done++;
          const ms = performance.now() - scheduled;
          const list = latencies.get(r.tool) ?? [];
          list.push(ms);
          latencies.set(r.tool, list);
          if (o.status !== 200 || o.violation) errors.set(`${r.tool} ${o.status} ${o.code}`, (errors.get(`${r.tool} ${o.status} ${o.code}`) ?? 0) + 1);
          else r.after?.();
        }),
      );
    }
    if (now >= nextRss) {
      rss.push([Math.round((now - started) / 1000), server.rssKiB()]);
      nextRss += 5000;
    }
    await Bun.sleep(2);
  }
  await Promise.all(inFlightDone);
  rss.push([Math.round((performance.now() - started) / 1000), server.rssKiB()]);
  for (const f of fallbacks) console.log(`  note: ${f} is not registered; its share of the mix went to get_inbox`);
  return { rate, sent, done, shed, seconds: (performance.now() - started) / 1000, latencies, errors, rss };
}

function report(r: StageResult): void {
  const all = [...r.latencies.values()].flat().sort((a, b) => a - b);
  const errorCount = [...r.errors.values()].reduce((a, b) => a + b, 0) + r.shed;
  console.log(
    `\noffered ${r.rate} req/s for ${r.seconds.toFixed(0)} s: ${r.done} answered, ${(r.done / r.seconds).toFixed(0)} req/s, p50 ${percentile(all, 50).toFixed(1)} ms, p99 ${percentile(all, 99).toFixed(1)} ms, max ${all.at(-1)?.toFixed(1)} ms, errors ${errorCount}${r.shed ? ` (${r.shed} shed: over ${MAX_IN_FLIGHT} in flight)` : ""}`,
  );
  for (const [tool, list] of [...r.latencies.entries()].sort((a, b) => b[1].length - a[1].length)) {
    const sorted = list.sort((a, b) => a - b);
    console.log(
      `  ${tool.padEnd(24)} ${String(list.length).padStart(7)} calls   p50 ${percentile(sorted, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(sorted, 99).toFixed(1).padStart(7)} ms`,
    );
  }
  for (const [k, n] of r.errors) console.log(`  error: ${k} x${n}`);
  const warm = r.rss.find(([t]) => t >= Math.min(20, r.seconds / 4)) ?? r.rss[0]!;
  console.log(
    `  server RSS: start ${mib(r.rss[0]![1])}, after warm-up (${warm[0]} s) ${mib(warm[1])}, end ${mib(r.rss.at(-1)![1])}, peak ${mib(Math.max(...r.rss.map(([, k]) => k)))}`,
  );
  console.log(`  RSS every 5 s (MiB): ${r.rss.map(([, k]) => (k / 1024).toFixed(0)).join(" ")}`);
}

try {
  const agents = await seed(AGENTS);
  const seeded = dbBytes();
  console.log(`database after seeding: ${(seeded / 1024 / 1024).toFixed(1)} MiB, ${(seeded / AGENTS).toFixed(0)} bytes per agent`);
  const server = await spawnServer(dbPath, ["--log-level", "warn"]);
  try {
    console.log(`server pid ${server.pid}, RSS at start ${mib(server.rssKiB())}`);
    const pairs = await relate(restApi(server.url), agents.slice(0, ACTIVE));
    for (const rate of RATES) report(await stage(server, agents, pairs, rate, SECONDS));
    const size = dbBytes();
    console.log(
      `\ndatabase at the end: ${(size / 1024 / 1024).toFixed(1)} MiB for ${AGENTS} agents: ${(size / AGENTS).toFixed(0)} bytes per agent (${(seeded / AGENTS).toFixed(0)} right after seeding)`,
    );
  } finally {
    await server.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
