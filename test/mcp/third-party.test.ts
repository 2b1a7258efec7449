// Real third-party MCP clients against the compiled bin/svc: the MCP Inspector's command-line mode in both protocol
// eras (2026-07-28 and the 2025 handshake), and the official conformance suite's generic server scenarios (it needs
// fs.globSync, so it runs under bun; its 0.1.16 has scenarios up to 2025-11-25 only).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { SVC, ensureBuilt } from "../cli/bin.ts";

const ROOT = join(import.meta.dir, "../..");
const INSPECTOR = join(ROOT, "node_modules/.bin/inspector");
const CONFORMANCE = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];

let dir: string;
let server: Subprocess<"ignore", "pipe", "inherit">;
let url: string;
let apiKey: string;

/** Reads the server's log until it says where it listens (the OS picks the port), then keeps draining it. */
async function listeningUrl(stdout: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stdout.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`bin/svc serve stopped before listening: ${seen.slice(0, 500)}`);
    seen += decoder.decode(value);
    const m = /listening on (http:\/\/[^\s"]+)/.exec(seen);
    if (m) {
      void (async () => {
        while (!(await reader.read()).done) {}
      })().catch(() => undefined);
      return m[1]!;
    }
  }
}

/** Runs a client; HOME is the test's own directory, as the Inspector keeps its state there. */
async function run(cmd: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(cmd, { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: dir, NO_COLOR: "1" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), "svc-mcp-3p-"));
  server = Bun.spawn([SVC, "serve", "--host", "127.0.0.1", "--port", "0", "--db", `file:${join(dir, "svc.db")}`], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  url = await listeningUrl(server.stdout);
  const res = await fetch(`${url}/v1/agents`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ handle: "third-party", display_name: "Third Party" }),
  });
  apiKey = ((await res.json()) as any).data.api_key;
}, 120_000);

afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

describe.each(["modern", "legacy"])("MCP Inspector, command-line mode, protocol era %s", (era) => {
  const inspect = (path: string, ...args: string[]) =>
    run([INSPECTOR, "--cli", `${url}${path}`, "--transport", "http", "--format", "json", "--protocol-era", era, ...args]);

  test("tools/list with a bearer key lists every tool of the running bin/svc", async () => {
    const r = await inspect("/mcp", "--method", "tools/list", "--header", `Authorization: Bearer ${apiKey}`);
    expect({ code: r.code, stderr: r.code ? r.stderr : "" }).toEqual({ code: 0, stderr: "" });
    const tools = JSON.parse(r.stdout).result.tools;
    expect(tools.map((t: any) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
  }, 60_000);

  // --strict reports each schema a single-type dialect (Gemini's function declarations) cannot take: type arrays,
  // schemas that constrain nothing. Both servers' tools must pass with no finding at all, warnings included.
  test.each(["/mcp", "/mcp/docs"])(
    "tools/list --strict on %s: every tool schema is portable",
    async (path) => {
      const r = await inspect(path, "--method", "tools/list", "--strict");
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      const listed = JSON.parse(r.stdout);
      expect(listed.schemaFindings).toBeUndefined();
      expect(listed.result.tools.length).toBeGreaterThan(0);
    },
    60_000,
  );

  test("tools/call get_me with the key", async () => {
    const r = await inspect("/mcp", "--method", "tools/call", "--tool-name", "get_me", "--header", `Authorization: Bearer ${apiKey}`);
    expect({ code: r.code, stderr: r.code ? r.stderr : "" }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(r.stdout).result.structuredContent.agent.handle).toBe("third-party");
  }, 60_000);

  test("the MCP Apps views are embedded in the binary too", async () => {
    const r = await inspect("/mcp", "--method", "resources/read", "--uri", "ui://svc/balances.html", "--header", `Authorization: Bearer ${apiKey}`);
    expect({ code: r.code, stderr: r.code ? r.stderr : "" }).toEqual({ code: 0, stderr: "" });
    const [content] = JSON.parse(r.stdout).result.contents;
    expect(content.mimeType).toBe("text/html;profile=mcp-app");
    expect(content.text).toStartWith("<!doctype html>");
    expect(content.text).toContain("ui/initialize");
  }, 60_000);

  test("the docs server, without a credential, serves the pages embedded in the binary", async () => {
    const r = await inspect("/mcp/docs", "--method", "resources/read", "--uri", "svc://docs/overview");
    expect({ code: r.code, stderr: r.code ? r.stderr : "" }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(r.stdout).result.contents[0].text).toStartWith("# svc: overview");
  }, 60_000);
});

describe.each(["/mcp", "/mcp/docs"])("conformance suite against %s", (path) => {
  test.each(SCENARIOS)(
    "%s",
    async (scenario) => {
      const r = await run([process.execPath, CONFORMANCE, "server", "--url", `${url}${path}`, "--scenario", scenario]);
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(r.stdout);
      expect({ scenario, code: r.code, summary: summary?.[0], output: r.code ? r.stdout.slice(-1500) : "" }).toEqual({
        scenario,
        code: 0,
        summary: `Passed: ${summary?.[2]}/${summary?.[2]}, 0 failed`,
        output: "",
      });
    },
    60_000,
  );
});
