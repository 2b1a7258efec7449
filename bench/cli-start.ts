// How long the compiled svc takes to start and answer for commands that do not serve, as a person or a shell runs
// them: --version, --help, a command's help, svc status against a port where nothing listens, and a TAB of each
// shell's completion (`svc __complete`, what the scripts of `svc completion` run). Beside each, a compiled
// hello-world started the same way: the machine is shared and its speed drifts, so the floor is measured around
// the figures. Prints the median and the fastest of each in ms, wall-clock and CPU (user + system: what the start
// itself costs, which other processes on the machine move less). bin/svc is built from the tree first when stale.
// Run: bun run bench/cli-start.ts [runs=20] [path to svc]
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanEnv, ensureBuilt, freshConfigHome, SVC } from "../test/cli/bin.ts";

const RUNS = Number(process.argv[2] ?? 20);
const svc = process.argv[3] ?? SVC;
if (!process.argv[3]) await ensureBuilt();

const dir = mkdtempSync(join(tmpdir(), "svc-bench-start-"));
writeFileSync(join(dir, "hello.ts"), 'console.log("hello");\n');
const built = Bun.spawnSync(["bun", "build", "--compile", "--minify", "--bytecode", "--format=esm", join(dir, "hello.ts"), "--outfile", join(dir, "hello")]);
if (built.exitCode !== 0) throw new Error(`building the hello-world failed: ${built.stderr}`);

// Nothing listens on this port: svc status reports the server unreachable (the refused connection is immediate).
const unused = Bun.serve({ port: 0, fetch: () => new Response() });
const deadUrl = `http://127.0.0.1:${unused.port}`;
unused.stop(true);

const env = { ...cleanEnv(), XDG_CONFIG_HOME: freshConfigHome(), SVC_URL: deadUrl };
const cases: [string, string[]][] = [
  ["hello-world (compiled Bun, the floor)", [join(dir, "hello")]],
  ["svc --version", [svc, "--version"]],
  ["svc --help", [svc, "--help"]],
  ["svc call --help", [svc, "call", "--help"]],
  ["svc serve --help", [svc, "serve", "--help"]],
  ["svc status (nothing listening)", [svc, "status"]],
  ["TAB: svc call get_bal<TAB>", [svc, "__complete", "--", "call", "get_bal"]],
  ["TAB: svc call add_expense split=<TAB>", [svc, "__complete", "--", "call", "add_expense", "split="]],
  ["TAB: svc us<TAB>", [svc, "__complete", "--", "us"]],
];

/** One run: wall-clock and CPU milliseconds. */
function once(cmd: string[]): [number, number] {
  const start = performance.now();
  const r = Bun.spawnSync(cmd, { env, stdout: "ignore", stderr: "ignore" });
  const ms = performance.now() - start;
  if (r.exitCode !== 0 && !cmd.includes("status")) throw new Error(`${cmd.join(" ")} exited ${r.exitCode}`);
  return [ms, Number(r.resourceUsage.cpuTime.total) / 1000];
}

// Rounds of every case in turn, so a slow minute of the machine falls on all of them alike.
const wall = cases.map(() => [] as number[]);
const cpu = cases.map(() => [] as number[]);
for (const cmd of cases.map(([, c]) => c)) once(cmd); // warm the page cache
for (let round = 0; round < RUNS; round++) {
  cases.forEach(([, cmd], i) => {
    const [w, c] = once(cmd);
    wall[i]!.push(w);
    cpu[i]!.push(c);
  });
}

const figures = (xs: number[]) => {
  const sorted = xs.toSorted((a, b) => a - b);
  return [sorted[Math.floor(sorted.length / 2)]!, sorted[0]!].map((ms) => ms.toFixed(1).padStart(8)).join("");
};
console.log(`${RUNS} runs each, ${svc}; ms\n`);
console.log(`${"".padEnd(40)}${"wall: median fastest".padStart(20)}${"CPU: median fastest".padStart(22)}`);
cases.forEach(([label], i) => console.log(`${label.padEnd(40)}    ${figures(wall[i]!)}      ${figures(cpu[i]!)}`));
