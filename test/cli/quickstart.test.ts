// The README's quick start on another port: `svc serve --port P` on a terminal prints the line that points the
// client commands at it, and the README's next steps, run after that line, reach the server.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { SVC, cleanEnv, ensureBuilt, freshConfigHome, svcLine } from "./bin.ts";

let dir: string;
let server: Subprocess | undefined;
beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), "svc-quickstart-"));
}, 120_000);
afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** A port nobody listens on right now, other than the default. */
function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

test("after `svc serve --port P`, the printed export line makes the README's register, login and get_me reach it", async () => {
  const port = freePort();
  let output = "";
  const decoder = new TextDecoder();
  const { promise: told, resolve } = Promise.withResolvers<string>();
  server = Bun.spawn([SVC, "serve", "--port", String(port), "--db", `file:${join(dir, "svc.db")}`], {
    env: cleanEnv(),
    terminal: {
      cols: 200,
      rows: 50,
      data: (_t, d) => {
        output += decoder.decode(d, { stream: true });
        const line = /^ *(export SVC_URL=\S+)\r?$/m.exec(output);
        if (line) resolve(line[1]!);
      },
    },
  });
  const exportLine = await Promise.race([told, Bun.sleep(20_000).then(() => `no export line in:\n${output}`)]);
  expect(exportLine).toBe(`export SVC_URL=http://127.0.0.1:${port}`);
  // A person at a terminal reads where it runs, not JSON log lines.
  expect(output).toContain(`svc is running at http://127.0.0.1:${port} (database ${join(dir, "svc.db")})`);
  expect(output).not.toContain('{"time"');
  const home = freshConfigHome();
  const steps = await svcLine(
    [
      "set -e",
      exportLine,
      `key=$(svc call register_agent handle=alice display_name=Alice | sed -n 's/.*"api_key": "\\(svc_[^"]*\\)".*/\\1/p')`,
      `svc login --key "$key"`,
      // svc login stored the URL with the key: later commands need neither.
      "unset SVC_URL",
      "svc call get_me",
    ].join("\n"),
    { XDG_CONFIG_HOME: home },
  );
  expect({ code: steps.code, stderr: steps.stderr }).toEqual({ code: 0, stderr: "" });
  expect(steps.stdout).toContain(`Logged in to http://127.0.0.1:${port} as @alice`);
  expect(steps.stdout).toContain('"handle": "alice"');
}, 60_000);

test("with --log-level on a terminal, svc serve writes JSON log lines as before", async () => {
  const port = freePort();
  let output = "";
  const decoder = new TextDecoder();
  const { promise: listening, resolve } = Promise.withResolvers<void>();
  const proc = Bun.spawn([SVC, "serve", "--port", String(port), "--log-level", "info", "--workers", "1", "--db", `file:${join(dir, "json.db")}`], {
    env: cleanEnv(),
    terminal: {
      cols: 400,
      rows: 50,
      data: (_t, d) => {
        output += decoder.decode(d, { stream: true });
        if (output.includes("svc listening")) resolve();
      },
    },
  });
  try {
    await Promise.race([listening, Bun.sleep(20_000)]);
    expect(output).toMatch(/^\{"time":"[^"]+","level":"info","msg":"svc listening on /m);
    expect(output).not.toContain("svc is running at");
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}, 60_000);
