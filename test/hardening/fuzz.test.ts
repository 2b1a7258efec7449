// Quick form of the schema fuzzing (the long form is bench/fuzz-long.ts): every registered tool, valid and
// near-miss arguments from its input schema and bodies no tool accepts, over REST and MCP (when mounted).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { formatCounts, newReport, planCases, RAW_BODIES, runCases } from "./fuzz.ts";
import { mcpAvailable, McpSession, restCall } from "./transports.ts";
import { buildWorld, type World } from "./world.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);

let s: TestServer;
let world: World;
let mcp: McpSession | undefined;
beforeAll(async () => {
  s = await startTestServer();
  world = await buildWorld(s, "fz", SEED);
  if (await mcpAvailable(s.url)) mcp = await McpSession.connect(s.url, world.owner.key);
}, 30_000);
afterAll(async () => {
  await mcp?.close();
  await s.stop();
});

describe("schema fuzzing of every tool", () => {
  test("every answer is the success envelope valid against the output schema, or a 4xx error envelope", async () => {
    const cases = planCases(world, SEED, 2, mcp !== undefined);
    expect(new Set(cases.map((c) => c.tool))).toEqual(new Set(TOOLS.map((t) => t.name)));
    expect(new Set(cases.filter((c) => c.kind === "raw").map((c) => c.label))).toEqual(expect.objectContaining(new Set(RAW_BODIES.map((r) => r.label))));
    const report = newReport();
    await runCases(s.url, world.owner.key, cases, report, { concurrency: 6, mcp });
    if (report.violations.length) console.error(`seed ${SEED}\n${formatCounts(report)}\n${JSON.stringify(report.violations.slice(0, 8), null, 2)}`);
    expect(report.violations).toEqual([]);
    expect(report.calls).toBe(cases.length);
    // the fuzz reached past validation: some calls succeeded and some were refused for other reasons
    const codes = [...report.byCode.keys()].join(" ");
    expect(codes).toContain("200 OK");
    expect(codes).toContain("400 VALIDATION_ERROR");
    expect(codes).toMatch(/404 NOT_FOUND|409 CONFLICT/);
  }, 60_000);

  test("the judge flags what breaks the contract: 5xx, no envelope, stack traces, hangs, refused arguments let through", async () => {
    const bad = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        const h = { "x-request-id": "r1", "content-type": "application/json", "x-content-type-options": "nosniff", "cache-control": "no-store" };
        const envelope = (code: string, message: string) => JSON.stringify({ ok: false, error: { code, message, suggested_action: "x" }, request_id: "r1" });
        const tool = new URL(req.url).pathname.split("/").pop();
        if (tool === "five_hundred") return new Response(envelope("INTERNAL", "boom"), { status: 500, headers: h });
        if (tool === "not_json") return new Response("<html>", { status: 200, headers: h });
        if (tool === "stack") return new Response(envelope("NOT_FOUND", "at run (/srv/server/tools/x.ts:12:7)"), { status: 404, headers: h });
        if (tool === "hang") await Bun.sleep(2_000);
        if (tool === "no_nosniff") return new Response(envelope("NOT_FOUND", "gone"), { status: 404, headers: { ...h, "x-content-type-options": "" } });
        return new Response(envelope("NOT_FOUND", "gone"), { status: 404, headers: h });
      },
    });
    const url = `http://127.0.0.1:${bad.port}`;
    try {
      const judged = async (tool: string) => (await restCall(url, tool, null, { body: "{}" }, 300)).violation;
      expect(await judged("five_hundred")).toContain("500");
      expect(await judged("not_json")).toContain("without a JSON body");
      expect(await judged("stack")).toContain("stack trace");
      expect(await judged("hang")).toContain("no answer within 300 ms");
      expect(await judged("no_nosniff")).toContain("nosniff");
      expect(await judged("fine")).toBeNull();
      const report = newReport();
      await runCases(url, "k", [{ tool: "fine", transport: "rest", kind: "near-miss", label: "probe", args: {}, expectCode: "VALIDATION_ERROR" }], report, {
        concurrency: 1,
      });
      expect(report.violations[0]!.outcome.violation).toContain("expected VALIDATION_ERROR but the answer was 404 NOT_FOUND");
    } finally {
      bad.stop(true);
    }
  });

  test("MCP is fuzzed too once server/adapters/mcp.ts mounts /mcp", async () => {
    const mounted = await mcpAvailable(s.url);
    expect(mcp !== undefined).toBe(mounted);
    if (!mounted) console.warn("fuzz: /mcp is not mounted yet; REST only");
  });
});
