// Past one machine: one sqld, three instances in remote mode and two
// embedded replicas, with no setting for one another: each writes its own batches. Writes retried with the same key
// on another instance have one effect and replay the same answer, balances sum to zero, each inbox item is new once
// across instances, no call answers but 200 or 503, an instance killed mid-load loses no acknowledged write, and with
// the primary stopped the replicas still answer reads.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, spawnServer } from "../hardening/spawn-server.ts";
import { restCall } from "../hardening/transports.ts";
import { type Api, type Member, ok, register, restApi } from "../hardening/world.ts";
import { type Sqld, startSqld } from "../sqld.ts";

const PEER = ["--log-level", "warn"];
let sqld: Sqld;
let dir: string;
const servers: ServerProcess[] = [];
let apis: Api[] = [];
let members: Member[] = [];
let groupId = "";
/** Every answer with a status of 500 or more but 503, seen anywhere: there must be none. */
const failures: string[] = [];

beforeAll(async () => {
  sqld = await startSqld();
  dir = mkdtempSync(join(tmpdir(), "svc-scale-"));
  // The first applies the migrations; the others start beside it: three remote, two replicas of the same primary.
  servers.push(await spawnServer(sqld.url, PEER));
  servers.push(
    ...(await Promise.all([
      spawnServer(sqld.url, PEER),
      spawnServer(sqld.url, PEER),
      spawnServer(`file:${join(dir, "replica-1.db")}`, ["--sync-url", sqld.url, ...PEER]),
      spawnServer(`file:${join(dir, "replica-2.db")}`, ["--sync-url", sqld.url, ...PEER]),
    ])),
  );
  apis = servers.map((s) => restApi(s.url));
  members = [];
  for (const [i, h] of ["sc-ann", "sc-ben", "sc-cat", "sc-dan"].entries()) members.push(await register(apis[i]!, h));
  const { group } = await ok(apis[0]!, "create_group", { name: "Scale", currency: "EUR", idempotency_key: crypto.randomUUID() }, members[0]!.key);
  groupId = group.group_id;
  const { invite } = await ok(apis[1]!, "create_group_invite", { group_id: groupId, max_uses: 10, idempotency_key: crypto.randomUUID() }, members[0]!.key);
  for (const [i, m] of members.slice(1).entries())
    await ok(apis[i + 2]!, "join_group", { invite_code: invite.code, idempotency_key: crypto.randomUUID() }, m.key);
}, 90_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill9().catch(() => {})));
  await sqld?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const live = () => servers.map((s, i) => (s.proc.exitCode === null && s.proc.signalCode === null ? i : -1)).filter((i) => i >= 0);

/**
 * A call sent to instance `at`, and while it answers 503 (or cannot be reached), to the next live one, with the same
 * arguments: its idempotency key makes the retry safe. Any other 5xx is a failure.
 */
async function call(at: number, tool: string, args: Record<string, unknown>, key: string): Promise<any> {
  const deadline = Date.now() + 30_000;
  let last = "";
  for (let i = at; Date.now() < deadline; i++) {
    const alive = live();
    const target = alive.includes(i % servers.length) ? i % servers.length : alive[i % alive.length]!;
    const r = await apis[target]!.call(tool, args, key);
    if (r.status === 0) {
      // No answer: the instance is gone (killed); the next one gets the call.
      await Bun.sleep(50);
      continue;
    }
    if (r.status === 200) return r.body.data;
    if (r.status === 503) {
      last = JSON.stringify(r.body.error);
      await Bun.sleep(100);
      continue;
    }
    if (r.status >= 500) failures.push(`${tool} on instance ${target}: ${r.status} ${JSON.stringify(r.body.error)}`);
    throw new Error(`${tool} on instance ${target} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  throw new Error(`${tool} found no instance to answer it within 30 s; the last 503: ${last}`);
}

const withoutInbox = (data: any) => JSON.stringify({ ...data, inbox: undefined });

/** One write, then the same call (same key) on another instance (of the first `over`): one effect, the same answer. Its id. */
async function writeTwice(n: number, over = servers.length): Promise<string> {
  const payer = members[n % members.length]!;
  const other = members[(n + 1) % members.length]!;
  const key = crypto.randomUUID();
  const [tool, args] =
    n % 3 === 2
      ? (["record_payment", { group_id: groupId, to: other.handle, amount_minor: 100 + n, idempotency_key: key }] as const)
      : (["add_expense", { group_id: groupId, description: `Load ${n}`, amount_minor: 1000 + n, idempotency_key: key }] as const);
  const first = await call(n % over, tool, args, payer.key);
  const again = await call((n + 1) % over, tool, args, payer.key);
  expect(withoutInbox(again)).toBe(withoutInbox(first));
  return tool === "add_expense" ? first.expense.expense_id : first.payment.payment_id;
}

/** count writes, width at a time; acknowledged(n) is called as the n-th is acknowledged. */
async function writes(from: number, count: number, width: number, acknowledged?: (n: number) => void): Promise<string[]> {
  const ids: string[] = [];
  let next = from;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < from + count) {
        ids.push(await writeTwice(next++));
        acknowledged?.(ids.length);
      }
    }),
  );
  return ids;
}

async function ledgerOf(): Promise<{ expenses: number; payments: number; balances: number[] }> {
  const client = createClient({ url: sqld.url });
  try {
    const one = async (q: string) => Number((await client.execute({ sql: q, args: [groupId] })).rows[0]![0]);
    const balances = (await call(3, "get_balances", { group_id: groupId }, members[0]!.key)).members.map((m: any) => m.balance_minor as number);
    return {
      expenses: await one("SELECT count(*) FROM expenses WHERE group_id = ?"),
      payments: await one("SELECT count(*) FROM payments WHERE group_id = ?"),
      balances,
    };
  } finally {
    client.close();
  }
}

test("mixed load over five instances: nothing lost or doubled, each inbox item new once, no 500", async () => {
  const seenNew: string[] = [];
  let loading = true;
  // The last member polls its inbox round the instances while the others write.
  const polling = (async () => {
    for (let i = 0; loading; i++) {
      const { items } = await call(i, "get_inbox", { limit: 100 }, members[3]!.key);
      seenNew.push(...items.map((item: any) => item.item_id));
    }
  })();
  const ids = await writes(0, 36, 6);
  loading = false;
  await polling;
  for (;;) {
    const { items } = await call(0, "get_inbox", { limit: 100 }, members[3]!.key);
    if (!items.length) break;
    seenNew.push(...items.map((item: any) => item.item_id));
  }
  expect(new Set(ids).size).toBe(36);
  const ledger = await ledgerOf();
  expect(ledger.expenses + ledger.payments).toBe(36);
  expect(ledger.balances.reduce((a, b) => a + b, 0)).toBe(0);
  // Each item was new exactly once, whichever instance the poll reached.
  expect(seenNew.length).toBe(new Set(seenNew).size);
  const all = await call(4, "get_inbox", { include_seen: true, limit: 100 }, members[3]!.key);
  expect(all.items.every((item: any) => seenNew.includes(item.item_id))).toBe(true);
  expect(failures).toEqual([]);
}, 60_000);

test("on every instance each key is its own agent's, however many keys were looked up before it", async () => {
  for (const [i, api] of apis.entries()) {
    for (const m of [...members, ...members.slice().reverse()]) {
      const me = await call(i, "get_me", {}, m.key);
      expect({ instance: i, handle: me.agent.handle }).toEqual({ instance: i, handle: m.handle });
    }
    expect((await api.call("get_me", {}, "not-a-key")).status).toBe(401);
  }
});

test("16 writers for 20 s over the three remote instances, each write retried with its key on another: nothing lost or doubled", async () => {
  const start = await ledgerOf();
  const ids: string[] = [];
  const deadline = Date.now() + 20_000;
  let next = 1000;
  // Each writer takes the next number: its instance, and the next one for the retry, go round the three.
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (Date.now() < deadline) ids.push(await writeTwice(next++, 3));
    }),
  );
  expect(new Set(ids).size).toBe(ids.length);
  const ledger = await ledgerOf();
  expect(ledger.expenses + ledger.payments - start.expenses - start.payments).toBe(ids.length);
  expect(ledger.balances.reduce((a, b) => a + b, 0)).toBe(0);
  expect(failures).toEqual([]);
  console.log(`16 writers, 20 s, 3 instances: ${ids.length} writes, each answered twice`);
}, 90_000);

test("an instance killed with -9 mid-load: the others go on, every acknowledged write is there", async () => {
  const start = await ledgerOf();
  // Killed once a quarter of the writes are acknowledged: the rest are in flight or still to come.
  let killed: Promise<void> | undefined;
  const ids = await writes(100, 24, 4, (n) => {
    if (n === 6) killed = servers[0]!.kill9();
  });
  await killed;
  const ledger = await ledgerOf();
  expect(ledger.expenses + ledger.payments - start.expenses - start.payments).toBe(ids.length);
  expect(ledger.balances.reduce((a, b) => a + b, 0)).toBe(0);
  expect(failures).toEqual([]);
}, 60_000);

test("with the primary stopped, the replicas still answer reads from their own files", async () => {
  const replicas = [3, 4].filter((i) => live().includes(i));
  expect(replicas.length).toBeGreaterThan(0);
  await sqld.kill();
  for (const i of replicas) {
    const r = await apis[i]!.call("get_balances", { group_id: groupId }, members[1]!.key);
    expect(r.status).toBe(200);
    expect(r.body.data.members.map((m: any) => m.balance_minor).reduce((a: number, b: number) => a + b, 0)).toBe(0);
    // A write cannot be stored: 503 with retry_after, never a 500.
    const w = await restCall(
      servers[i]!.url,
      "add_expense",
      members[1]!.key,
      { body: JSON.stringify({ group_id: groupId, description: "Offline", amount_minor: 5, idempotency_key: crypto.randomUUID() }) },
      30_000,
    );
    expect(w.status).toBe(503);
    expect(w.body.error.retry_after).toBeGreaterThan(0);
  }
}, 60_000);
