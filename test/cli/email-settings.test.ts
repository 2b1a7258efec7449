// svc serve's e-mail settings, as an operator gives them to the compiled binary: --smtp-url and --mail-from go
// together and are checked before anything starts; in the settings file they are keys like every other flag, and the
// server started from it sends e-mail (the sign-in page offers it, and a confirmation link reaches the SMTP server).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../hardening/spawn-server.ts";
import { MailSink, SINK_PASSWORD, SINK_USER } from "../web/email-sink.ts";
import { PageClient } from "../web/page-client.ts";
import { SVC, cleanEnv, ensureBuilt, svc } from "./bin.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-email-settings-"));
beforeAll(() => ensureBuilt(), 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("bad e-mail settings stop svc serve with a usage error that says what is wrong, never echoing the password", async () => {
  const db = ["--db", `file:${join(dir, "refused.db")}`, "--port", "0"];
  const scheme = await svc(["serve", ...db, "--smtp-url", "https://user:s3cret@mail.example.org", "--mail-from", "svc@example.org"]);
  expect(scheme.code).not.toBe(0);
  expect(scheme.stderr).toContain("expected an smtp:// or smtps:// URL");
  expect(scheme.stderr).not.toContain("s3cret");
  const alone = await svc(["serve", ...db, "--smtp-url", "smtps://user:s3cret@mail.example.org"]);
  expect(alone.code).not.toBe(0);
  expect(alone.stderr).toContain("--smtp-url needs --mail-from");
  const from = await svc(["serve", ...db, "--smtp-url", "smtp://127.0.0.1:2525", "--mail-from", "svc <a@b.org>, c@d.org"]);
  expect(from.code).not.toBe(0);
  expect(from.stderr).toContain("expected an address such as svc@example.org");
});

test("smtp-url and mail-from in the settings file: the server sends e-mail", async () => {
  const sink = await MailSink.start();
  const port = freePort();
  const settings = join(dir, "svc.toml");
  writeFileSync(
    settings,
    [
      `db = "file:${join(dir, "svc.db")}"`,
      `port = ${port}`,
      `workers = 1`,
      `log-level = "warn"`,
      `smtp-url = "smtp://${SINK_USER}:${encodeURIComponent(SINK_PASSWORD)}@127.0.0.1:${sink.port}"`,
      `mail-from = "svc <svc@svc.test>"`,
    ].join("\n"),
  );
  const server = Bun.spawn([SVC, "serve"], { cwd: dir, env: { ...cleanEnv(), SVC_CONFIG: settings }, stdout: "pipe", stderr: "pipe" });
  const base = `http://127.0.0.1:${port}`;
  try {
    const deadline = Date.now() + 30_000;
    while (
      !(await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(await new Response(server.stderr).text());
      await Bun.sleep(50);
    }
    const b = new PageClient(base);
    expect((await b.get("/signin")).html).toContain("E-mail me a link");
    await b.get("/signup");
    await b.post("/signup", { handle: "file-ann", display_name: "Ann", method: "password", password: "correct horse battery staple" });
    await b.get("/settings");
    expect((await b.post("/settings/email", { email: "ann@example.org" })).status).toBe(303);
    const mail = await sink.next(20_000);
    expect(mail.subject).toBe("Confirm your e-mail address for svc");
    expect(mail.headers.get("from")).toBe("svc <svc@svc.test>");
  } finally {
    server.kill("SIGTERM");
    await server.exited;
    await sink.stop();
  }
}, 60_000);
