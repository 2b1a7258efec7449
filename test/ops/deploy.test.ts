// The files in deploy/: the systemd units pass systemd-analyze (syntax, and the hardening's exposure), the example
// settings file starts the compiled server, and the Docker image's layout (its ENV, CMD and HEALTHCHECK, with the
// image's paths under a temporary root, since no Docker engine runs here) serves and answers its health check.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SVC, cleanEnv, ensureBuilt } from "../cli/bin.ts";
import { freePort } from "../hardening/spawn-server.ts";

const DEPLOY = join(import.meta.dir, "../../deploy");
const dir = mkdtempSync(join(tmpdir(), "svc-deploy-"));
beforeAll(async () => {
  await ensureBuilt();
  const setup = Bun.spawnSync(["bash", join(import.meta.dir, "ensure-systemd.sh")], { stdout: "inherit", stderr: "inherit" });
  if (setup.exitCode !== 0) throw new Error("systemd-analyze could not be installed (test/ops/ensure-systemd.sh)");
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (cmd: string[], env: Record<string, string> = {}) => {
  const r = Bun.spawnSync(cmd, { env: { ...cleanEnv(), ...env }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
};

/** Starts a command that serves, waits for `url` to answer 200, and stops it. */
async function servesAt(cmd: string[], env: Record<string, string>, url: string): Promise<string> {
  const proc = Bun.spawn(cmd, { env: { ...cleanEnv(), ...env }, stdout: "pipe", stderr: "pipe" });
  try {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && proc.exitCode === null) {
      const res = await fetch(url).catch(() => null);
      if (res?.status === 200) return await res.text();
      await Bun.sleep(25);
    }
    throw new Error(`${cmd.join(" ")} did not answer ${url}: ${await new Response(proc.stderr).text()}`);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

describe("systemd units", () => {
  // systemd-analyze checks that ExecStart's program exists: the units are checked with it pointing at this build.
  const units = () => {
    const out = join(dir, "units");
    mkdirSync(out, { recursive: true });
    for (const name of ["svc.service", "svc-backup.service", "svc-backup.timer"]) {
      writeFileSync(join(out, name), readFileSync(join(DEPLOY, "systemd", name), "utf8").replaceAll("/usr/local/bin/svc", SVC));
    }
    return out;
  };

  test("pass systemd-analyze verify without a warning", () => {
    const out = units();
    const r = run(["systemd-analyze", "verify", ...["svc.service", "svc-backup.service", "svc-backup.timer"].map((n) => join(out, n))]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });

  test('svc.service is hardened: systemd-analyze security rates its exposure 4.0 or less ("OK")', () => {
    const r = run(["systemd-analyze", "security", "--offline=true", "--no-pager", join(units(), "svc.service")]);
    const exposure = Number(/Overall exposure level for svc\.service: ([\d.]+)/.exec(r.stdout + r.stderr)?.[1]);
    expect(exposure).toBeLessThanOrEqual(4);
  });
});

test("deploy/svc.toml starts the compiled server; an admin command with it finds the same database", async () => {
  const port = freePort();
  // The file's paths are a real host's; the variables (which win over the file) move them into the test's directory.
  const env = {
    SVC_CONFIG: join(DEPLOY, "svc.toml"),
    SVC_DB: `file:${join(dir, "toml", "svc.db")}`,
    SVC_PORT: String(port),
    SVC_BACKUP_DIR: join(dir, "toml", "backups"),
  };
  const ready = await servesAt([SVC, "serve"], env, `http://127.0.0.1:${port}/readyz`);
  expect(JSON.parse(ready).ok).toBe(true);
  const users = run([SVC, "users", "list", "--json"], env);
  expect(users.stderr).toBe("");
  expect(JSON.parse(users.stdout)).toEqual([]);
});

test("the Docker image's layout: its CMD, with its ENV, serves and answers its HEALTHCHECK", async () => {
  const dockerfile = readFileSync(join(DEPLOY, "Dockerfile"), "utf8");
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const root = join(dir, "image");
  const inImage = (text: string) =>
    text.replaceAll("/usr/local/bin/svc", join(root, "usr/local/bin/svc")).replaceAll("/var/lib/svc", join(root, "var/lib/svc"));
  // COPY --from=build /src/bin/svc /usr/local/bin/svc, and the state directory the image makes.
  expect(finalStage).toContain("COPY --from=build /src/bin/svc /usr/local/bin/svc");
  mkdirSync(join(root, "usr/local/bin"), { recursive: true });
  mkdirSync(join(root, "var/lib/svc"), { recursive: true });
  copyFileSync(SVC, join(root, "usr/local/bin/svc"));
  Bun.spawnSync(["chmod", "755", join(root, "usr/local/bin/svc")]);
  const port = freePort();
  const env = Object.fromEntries([...finalStage.matchAll(/^ENV (\w+)=(\S+)$/gm)].map(([, k, v]) => [k!, inImage(v!)]));
  expect(env.SVC_HOST).toBe("0.0.0.0");
  env.SVC_PORT = String(port);
  const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(finalStage)![1]!) as string[];
  const health = /^HEALTHCHECK .* CMD \["curl", "-fsS", "([^"]+)"\]$/m.exec(finalStage)![1]!;
  expect(health).toBe("http://127.0.0.1:8787/readyz");
  const ready = await servesAt(cmd.map(inImage), env, health.replace(":8787", `:${port}`));
  expect(JSON.parse(ready).ok).toBe(true);
});
