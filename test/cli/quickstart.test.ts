// The README's quick start on another port: `svc serve --port P` on a terminal prints the line that points the
// client commands at it, and the README's shell steps, run as printed after that line (the test plays the human on
// the page svc login shows), reach the server.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { VERSION } from "../../server/version.ts";
import { PageClient } from "../web/page-client.ts";
import { LOGIN_PROMPT, SVC, cleanEnv, ensureBuilt, freshConfigHome, watchOutput } from "./bin.ts";

const ROOT = join(import.meta.dir, "../..");

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

/** The README's shell steps, as printed: the block under "**The shell.**". */
function readmeShellSteps(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = /\*\*The shell\.\*\*[^`]*```sh\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error("README.md has no shell block under **The shell.**");
  return block[1]!.trim().split("\n");
}

test("after `svc serve --port P`, the printed export line and the README's shell steps, run as printed, reach it", async () => {
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
  const url = `http://127.0.0.1:${port}`;
  expect(exportLine).toBe(`export SVC_URL=${url}`);
  // A person at a terminal reads where it runs, not JSON log lines.
  expect(output).toContain(`svc ${VERSION} is running at ${url} (database ${join(dir, "svc.db")})`);
  expect(output).not.toContain('{"time"');

  // The README's steps after its export line, which stands for the line the server printed.
  const [readmeExport, ...steps] = readmeShellSteps();
  expect(readmeExport).toStartWith("export SVC_URL=");
  expect(steps[0]).toStartWith("bin/svc login ");
  const home = freshConfigHome();
  // svc login stored the URL with the key, so the README's next steps need neither: run them without SVC_URL.
  const script = ["set -e", exportLine, steps[0]!, "unset SVC_URL", ...steps.slice(1)];
  const proc = Bun.spawn(["bash", "-c", script.join("\n")], {
    cwd: ROOT,
    env: { ...cleanEnv(), XDG_CONFIG_HOME: home, DISPLAY: "", WAYLAND_DISPLAY: "" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const stdout = new Response(proc.stdout).text();
  // The human reads the page and the code svc login printed, and creates the handle alice there.
  const prompt = await watchOutput(proc.stderr, LOGIN_PROMPT);
  const [, enterUrl, userCode] = prompt.match;
  const b = new PageClient(url);
  await b.get(enterUrl!.slice(url.length));
  await b.follow(await b.post("/join", { user_code: userCode! }));
  expect((await b.post("/join/create", { handle: "alice", display_name: "Alice" })).status).toBe(303);
  const [out, err, code] = await Promise.all([stdout, prompt.all, proc.exited]);
  // Nothing but svc login's words for the human went to stderr.
  expect({ code, err: err.slice(prompt.match.index + prompt.match[0].length) }).toEqual({ code: 0, err: " to confirm there...\n" });
  expect(out).toContain(`Logged in to ${url} as @alice`);
  expect(out).toContain('"reachable": true');
  expect(out).toContain('"name": "Lisbon trip"');
  expect(out).toContain('"description": {\n      "untrusted_content": "Dinner"');
  expect(out).toContain('"members": [');
  expect(out).toContain('"name": "add_expense"');
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
    expect(output).toContain(`"version":"${VERSION}"`);
    expect(output).not.toContain("is running at");
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}, 60_000);
