// Group commit (db/turns.ts) runs a write's function again when a later write in its group fails after writing:
// every write tool, made to run twice that way inside one group, must leave the effect of one run (rows, and the
// rate limit it takes outside the database).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { Db, Tx } from "../../db/client.ts";
import { TOOLS } from "../../server/tools/catalogue.ts";
import type { Tool } from "../../server/tools/define.ts";
import { invoke } from "../../server/tools/invoke.ts";
import type { CallResult, Services } from "../../server/services.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { buildWorld, type Member, validArgs, type World, worldHints } from "./world.ts";

let s: TestServer;
let world: World;
let tables: string[];
beforeAll(async () => {
  // Group commit is the local file's writer (db/turns.ts): a remote or replica run (test/sqld.sh) still tests it here.
  s = await startTestServer({ dbUrl: `file:${join(mkdtempSync(join(tmpdir(), "svc-group-commit-")), "svc.db")}`, authToken: undefined, syncUrl: undefined });
  world = await buildWorld(s, "gc");
  const rows = (await s.server.db.raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")).rows;
  tables = rows.map((r) => String(r.name));
}, 60_000);
afterAll(() => s.stop());

/** Rows per table, as seen inside tx. */
async function counts(tx: Tx): Promise<Record<string, number>> {
  const query = tables.map((t) => `SELECT '${t}', count(*) FROM "${t}"`).join(" UNION ALL ");
  return Object.fromEntries(await tx.values<[string, number]>(sql.raw(query)));
}
const changes = (before: Record<string, number>, after: Record<string, number>) =>
  Object.fromEntries(tables.filter((t) => after[t] !== before[t]).map((t) => [t, after[t]! - before[t]!]));
// What the rate limit has left, from the RateLimit header (r=remaining).
const remaining = (r: CallResult) => Number(/;r=(\d+)/.exec(r.headers.RateLimit ?? "")?.[1]);

class Rollback extends Error {}

/** svc whose next db.tx (the tool's own transaction) is handed to wrap; later ones pass through. */
function intercepting(svc: Services, wrap: (db: Db, fn: (tx: Tx) => Promise<unknown>) => Promise<unknown>): Services {
  let first = true;
  const tx: Db["tx"] = (fn) => {
    if (!first) return svc.db.tx(fn);
    first = false;
    return wrap(svc.db, fn as (tx: Tx) => Promise<unknown>) as never;
  };
  return { ...svc, db: { ...svc.db, tx } };
}

const call = (svc: Services, tool: Tool, args: unknown, who: Member) =>
  invoke(svc, tool.name, args, { requestId: crypto.randomUUID(), token: who.key, clientAddress: () => "127.0.0.1" });

/** The call run once and rolled back: whether the tool's function succeeded, and the rows it changed. */
async function dryRun(tool: Tool, args: unknown, who: Member) {
  let effect: Record<string, number> | null = null;
  const result = await call(
    intercepting(s.server.services, (db, fn) =>
      db.tx(async (tx) => {
        const before = await counts(tx);
        await fn(tx);
        effect = changes(before, await counts(tx));
        throw new Rollback();
      }),
    ),
    tool,
    args,
    who,
  );
  return { effect: effect as Record<string, number> | null, result };
}

/**
 * The call's transaction with a write queued behind it that fails after writing, so that both share a group and the
 * call's function runs again. runs: how often it ran (1 when the group was committed between them, past its time).
 */
async function twiceInOneGroup(tool: Tool, args: unknown, who: Member) {
  let runs = 0;
  const failing = (tx: Tx) => tx.run(sql`DELETE FROM agents WHERE 0`).then(() => Promise.reject(new Rollback()));
  const svc = intercepting(s.server.services, (db, fn) => {
    const mine = db.tx((tx) => (runs++, fn(tx)));
    db.tx(failing).catch(() => undefined);
    return mine;
  });
  const before = await s.server.db.read(counts);
  const result = await call(svc, tool, args, who);
  const effect = changes(before, await s.server.db.read(counts));
  return { runs, result, effect };
}

/** Whether the tool, called in w with generated arguments, ran twice in one group (checking one effect each time). */
async function runTwice(tool: Tool, w: World): Promise<boolean> {
  // As owner towards member, then the other way; a public tool (register_agent) is given a handle nobody has.
  for (const [who, target] of [
    [w.owner, w.member.handle],
    [w.member, w.owner.handle],
  ] as const) {
    const handle = tool.isPublic ? `gc-new-${crypto.randomUUID().slice(0, 8)}` : target;
    for (let seed = 1; seed <= 12; seed++) {
      const args = validArgs(tool, worldHints({ ids: w.ids, target: handle }), seed, { omitWeight: seed % 2 ? 4 : 1 });
      if (!args) break;
      // Arguments whose call succeeds, found by a run that is rolled back.
      const dry = await dryRun(tool, args, who);
      if (!dry.effect) continue;
      const twice = await twiceInOneGroup(tool, args, who);
      expect({ tool: tool.name, ok: twice.result.ok }).toEqual({ tool: tool.name, ok: true });
      expect({ tool: tool.name, effect: twice.effect }).toEqual({ tool: tool.name, effect: dry.effect });
      // Taken once per call, however often its function ran.
      expect({ tool: tool.name, limit: remaining(twice.result) }).toEqual({ tool: tool.name, limit: remaining(dry.result) - 1 });
      if (twice.runs === 2) return true;
      // The group was committed between the two writes (a slow machine, db/turns.ts GROUP_MAX_MS): the call succeeded
      // once, so the same arguments may not succeed again (a contact added); the next seed brings new ones.
    }
  }
  return false;
}

test("every write tool run twice in one group commit leaves the effect of one run", async () => {
  // Tools that end or replace things (a contact removed, the key rotated) last, so the others find the world whole.
  const ending = (t: Tool) => t.tags.includes("destructive") || /^(remove|delete|rotate|disconnect|leave|archive|cancel|revoke)_/.test(t.name);
  const writeTools = TOOLS.filter((t) => t.writes && !t.writesWhenNeeded).sort((a, b) => Number(ending(a)) - Number(ending(b)));
  const uncovered: string[] = [];
  for (const tool of writeTools) if (!(await runTwice(tool, world))) uncovered.push(tool.name);
  // What the shared world no longer offers, each in a world of its own.
  const missed: string[] = [];
  for (const [n, name] of uncovered.entries()) {
    const tool = writeTools.find((t) => t.name === name)!;
    if (!(await runTwice(tool, await buildWorld(s, `gc${n}`)))) missed.push(name);
  }
  if (missed.length) console.warn(`group commit: no succeeding call generated for ${missed.join(", ")}`);
  console.log(`group commit: ${writeTools.length - missed.length} of ${writeTools.length} write tools ran twice in one group`);
  expect(writeTools.length - missed.length).toBeGreaterThan(writeTools.length / 2);
}, 180_000);
