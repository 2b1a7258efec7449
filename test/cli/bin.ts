// Runs the compiled bin/svc as a subprocess, the way a user runs it; builds it once per test run when absent or stale.
import { mkdtempSync, readdirSync, renameSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
export const SVC = join(ROOT, "bin/svc");

function newestSource(): number {
  let newest = statSync(join(ROOT, "package.json")).mtimeMs;
  for (const dir of ["cli", "server", "db", "docs", "scripts"]) {
    for (const f of readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })) {
      if (f.isFile()) newest = Math.max(newest, statSync(join(f.parentPath, f.name)).mtimeMs);
    }
  }
  return newest;
}

let built: Promise<void> | undefined;
/** install.sh builds bin/svc; this rebuilds it only when a source is newer, into a temporary file renamed into place. */
export function ensureBuilt(): Promise<void> {
  built ??= (async () => {
    let binTime = 0;
    try {
      binTime = statSync(SVC).mtimeMs;
    } catch {}
    if (binTime > newestSource()) return;
    const tmp = `${SVC}.${process.pid}.tmp`;
    const proc = Bun.spawn(["bun", "run", "scripts/build.ts", tmp], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    if ((await proc.exited) !== 0) throw new Error(`building bin/svc failed: ${await new Response(proc.stderr).text()}`);
    renameSync(tmp, SVC);
  })();
  return built;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON. */
  json(): any;
}

/** A fresh config directory, so no test sees the developer's own `svc login`. */
export const freshConfigHome = () => mkdtempSync(join(tmpdir(), "svc-cli-config-"));

// The caller's SVC_* settings must not leak into a test.
export const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_"))) as Record<string, string>;

/** Runs a command with stdout and stderr piped (so stdout is not a terminal). */
async function piped(cmd: string[], env: Record<string, string>, stdin?: string): Promise<Run> {
  const proc = Bun.spawn(cmd, {
    env: { ...cleanEnv(), XDG_CONFIG_HOME: env.XDG_CONFIG_HOME ?? freshConfigHome(), ...env },
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return {
    code,
    stdout,
    stderr,
    json: () => {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`${cmd.join(" ")} printed no JSON (exit ${code}):\n${stdout}\n${stderr}`);
      }
    },
  };
}

/** Runs `svc args...` with stdout and stderr piped (so stdout is not a terminal). */
export const svc = (args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}) => piped([SVC, ...args], opts.env ?? {}, opts.stdin);

/** Runs a command line as a person pastes it into bash, with this build's bin/ first on PATH (so `svc` is bin/svc). */
export const svcLine = (line: string, env: Record<string, string> = {}) =>
  piped(["bash", "-c", line], { PATH: `${join(ROOT, "bin")}:${process.env.PATH}`, ...env });

/** Runs `svc args...` on a pseudo-terminal, as a person at a terminal would see it. */
export async function svcOnTerminal(args: string[], env: Record<string, string> = {}): Promise<{ code: number; output: string }> {
  let output = "";
  const decoder = new TextDecoder();
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  const proc = Bun.spawn([SVC, ...args], {
    env: { ...cleanEnv(), XDG_CONFIG_HOME: freshConfigHome(), ...env },
    terminal: { cols: 200, rows: 50, data: (_t, d) => void (output += decoder.decode(d, { stream: true })), exit: () => resolve() },
  });
  // The process may end before the terminal has handed over all it wrote.
  const [code] = await Promise.all([proc.exited, closed]);
  return { code, output: output.replaceAll("\r\n", "\n") };
}

/**
 * Reads a process's output as a person watches a terminal: answers the first match of `pattern` as soon as it is
 * printed, and `all`, everything printed until the stream ends.
 */
export async function watchOutput(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<{ match: RegExpExecArray; all: Promise<string> }> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the output ended without ${pattern}:\n${text}`);
    text += decoder.decode(value, { stream: true });
    const match = pattern.exec(text);
    if (!match) continue;
    const all = (async () => {
      for (;;) {
        const next = await reader.read();
        if (next.done) return text;
        text += decoder.decode(next.value, { stream: true });
      }
    })();
    return { match, all };
  }
}

/** What svc login prints for the human: the page to open and the code it must show. */
export const LOGIN_PROMPT = /open (\S+)\nand check that the page shows the code ([B-Z]{4}-[B-Z]{4})[^\n]*\n[^\n]*\nWaiting for you/;
