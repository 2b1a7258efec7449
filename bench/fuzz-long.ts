// The long form of the schema fuzzing (the quick form is test/hardening/fuzz.test.ts): every registered tool,
// valid and near-miss arguments from its input schema and bodies no tool accepts, over REST and MCP, against
// `svc serve` running as its own process. Prints the calls, the answers by status and code, and the violations.
// Run: bun run bench/fuzz-long.ts [calls=20000] [seed]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TOOLS } from "../server/tools/catalogue.ts";
import { formatCounts, newReport, planCases, runCases } from "../test/hardening/fuzz.ts";
import { spawnServer } from "../test/hardening/spawn-server.ts";
import { mcpAvailable, McpSession } from "../test/hardening/transports.ts";
import { buildWorld, restApi } from "../test/hardening/world.ts";

const calls = Number(process.argv[2] ?? 20_000);
const seed = Number(process.argv[3] ?? Date.now() % 1_000_000);
const PER_TOOL = 6;

const dir = mkdtempSync(join(tmpdir(), "svc-fuzz-"));
const server = await spawnServer(join(dir, "svc.db"), ["--log-level", "error"]);
try {
  const world = await buildWorld(restApi(server.url), "fuzzlong", seed);
  const mcp = (await mcpAvailable(server.url)) ? await McpSession.connect(server.url, world.owner.key) : undefined;
  console.log(`fuzz-long: ${TOOLS.length} tools, seed ${seed}, target ${calls} calls, REST${mcp ? " and MCP" : " only (no /mcp)"}, server pid ${server.pid}`);
  const report = newReport();
  const started = performance.now();
  for (let round = 0; report.calls < calls; round++) {
    const cases = planCases(world, seed + round * 104_729, PER_TOOL, mcp !== undefined).slice(0, calls - report.calls);
    await runCases(server.url, world.owner.key, cases, report, { concurrency: 8, mcp, timeoutMs: 15_000 });
    if (round % 5 === 0) console.log(`  ${report.calls} calls, ${report.violations.length} violations, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  await mcp?.close();
  const fourxx = [...report.byCode.entries()].filter(([k]) => k.startsWith("4")).reduce((n, [, v]) => n + v, 0);
  console.log(`\ncalls: ${report.calls} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  console.log(`answers by status and code (4xx: ${fourxx}):\n${formatCounts(report)}`);
  console.log(`violations: ${report.violations.length}`);
  for (const v of report.violations.slice(0, 20)) console.log(JSON.stringify(v));
  process.exitCode = report.violations.length ? 1 : 0;
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
