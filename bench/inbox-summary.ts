// The inbox summary rides on every authenticated answer: get_me for an agent with an empty inbox, with 3,000 and
// with 30,000 unread items, same server, same load generator. The rate must not fall with the inbox's size.
// Run: bun run bench/inbox-summary.ts [seconds=5]
import { openDb } from "../db/client.ts";
import { deliverAll, type Delivery } from "../server/domain/inbox.ts";
import { ensureWrk, fmt, startSvc, tool, wrk } from "./load.ts";

const seconds = Number(process.argv[2] ?? 5);
const SIZES = [0, 3_000, 30_000];
ensureWrk();
const svc = await startSvc(18791);
try {
  const agents: { key: string; agentId: string; unread: number }[] = [];
  for (const unread of SIZES) {
    const r = await tool(svc.url, "register_agent", { handle: `bench-inbox-${unread}`, display_name: `Inbox ${unread}` });
    agents.push({ key: r.api_key, agentId: r.agent.agent_id, unread });
  }
  // Seeded through the inbox module beside the idle server: the same deliveries the tools make, asks among them.
  const db = await openDb({ url: `file:${svc.dir}/svc.db` });
  const now = new Date();
  for (const a of agents) {
    for (let done = 0; done < a.unread; ) {
      const batch: Delivery[] = [];
      for (; batch.length < 1000 && done < a.unread; done++) {
        // One in ten requires action: the type says so (INBOX_TYPES).
        batch.push({ to: a.agentId, type: done % 10 === 0 ? "ledger.expense_added" : "ledger.expense_updated", from: null, summaryMd: `Item ${done}` });
      }
      await db.tx((tx) => deliverAll(tx, now, batch));
    }
  }
  await db.close();

  console.log(`svc inbox summary benchmark: get_me, 64 connections, ${seconds} s each, wrk on loopback, 2 cores shared with the load generator\n`);
  const rates = new Map<number, number>();
  // A warm-up on the empty inbox first: measured cold, the first figure would be the lowest and flatter the ratios.
  wrk(`${svc.url}/v1/tools/get_me`, { seconds: 1, headers: { authorization: `Bearer ${agents[0]!.key}`, "content-type": "application/json" }, body: "{}" });
  for (const a of agents) {
    const me = await tool(svc.url, "get_me", {}, a.key);
    const r = wrk(`${svc.url}/v1/tools/get_me`, { seconds, headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" }, body: "{}" });
    rates.set(a.unread, r.rps);
    console.log(`get_me, ${String(a.unread).padStart(6)} unread (summary says ${String(me.inbox.unread).padStart(6)})   ${fmt(r)}`);
  }
  const empty = rates.get(0)!;
  console.log(`\nratio 3,000 unread / empty:  ${((100 * rates.get(3_000)!) / empty).toFixed(1)}% (target >= 80%)`);
  console.log(`ratio 30,000 unread / 3,000: ${((100 * rates.get(30_000)!) / rates.get(3_000)!).toFixed(1)}% (flat: about 100%)`);
} finally {
  svc.proc.kill();
}
