// Sign-in through a real OpenID Connect provider (oidc-provider, in-process on loopback), not a mock of svc's code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { CLIENT_ID, CLIENT_SECRET, startServerWithProvider, type EmailClaims, type ServerWithProvider } from "./oidc-helpers.ts";

/** Accounts of the provider: login name -> e-mail claims. */
const ACCOUNTS: Record<string, EmailClaims> = {
  "ann-login": { email: "ann@example.org", email_verified: true },
  "twin-login": { email: "ann@example.org", email_verified: true },
  "new-login": { email: "new@example.org", email_verified: true },
  "unverified-login": { email: "unverified@example.org", email_verified: false },
};

let world: ServerWithProvider;
let s: TestServer;
let issuer: string;

beforeAll(async () => {
  world = await startServerWithProvider((login) => ACCOUNTS[login]!);
  s = world.s;
  issuer = world.issuer;
});
afterAll(() => world.stop());

const providerSignIn = (b: PageClient, startPath: string, login: string) => world.providerSignIn(b, startPath, login);

describe("sign-in with the configured OpenID Connect provider", () => {
  test("an unlinked login is kept until the human proves a handle once; then it signs in directly and verifies the e-mail", async () => {
    const ann = await s.register("oidc-ann");
    const b = new PageClient(s.url);
    const page = await b.get("/account");
    expect(page.html).toContain('href="/account/oidc/start?flow=account"');
    const back = await providerSignIn(b, "/account/oidc/start?flow=account", "ann-login");
    expect(back.status).toBe(303);
    expect(back.location).toBe("/account");
    const account = await b.get("/account");
    expect(account.html).toContain("Send me a code");
    expect((await s.ok("get_me", {}, ann.key)).verification.email).toBe(false);
    const signedIn = await signInWithCode(s, b, "account", "oidc-ann", ann.key);
    expect(signedIn.html).toContain("Linked as ann@example.org (e-mail verified)");
    expect((await s.ok("get_me", {}, ann.key)).verification).toEqual({ email: true, phone: false });

    const fresh = new PageClient(s.url);
    await fresh.get("/account");
    const again = await providerSignIn(fresh, "/account/oidc/start?flow=account", "ann-login");
    expect(again.location).toBe("/account");
    expect((await fresh.get("/account")).html).toContain("Signed in as <strong>@oidc-ann</strong>");
  });

  test("a provider sign-in started with a return path (a claim link's) comes back to it; a foreign one is ignored", async () => {
    // ann-login was linked to @oidc-ann by the test above.
    const b = new PageClient(s.url);
    expect((await b.get("/signin?next=%2Finbox")).html).toContain('href="/account/oidc/start?flow=account&amp;next=%2Finbox"');
    expect((await providerSignIn(b, "/account/oidc/start?flow=account&next=%2Finbox", "ann-login")).location).toBe("/inbox");
    const other = new PageClient(s.url);
    await other.get("/account");
    expect((await providerSignIn(other, "/account/oidc/start?flow=account&next=%2F%2Fevil.example", "ann-login")).location).toBe("/account");
  });

  test("joining with the provider: the linked handle connects the new app", async () => {
    const j = await s.ok("join_network", { client_name: "Phone App" });
    const b = new PageClient(s.url);
    await b.get("/join");
    await b.post("/join", { user_code: j.user_code });
    expect((await b.get("/join")).html).toContain('href="/account/oidc/start?flow=join"');
    const back = await providerSignIn(b, "/account/oidc/start?flow=join", "ann-login");
    expect(back.location).toBe("/join");
    const confirm = await b.get("/join");
    expect(confirm.html).toContain("Connect to @oidc-ann");
    await b.post("/join/approve", {});
    const r = await s.ok("finish_join", { poll_token: j.poll_token });
    expect(r).toMatchObject({ status: "connected", created: false });
    expect(r.agent.handle).toBe("oidc-ann");
  });

  test("a new human signs in with the provider and creates a handle, which the login is linked to", async () => {
    const j = await s.ok("join_network", { client_name: "Laptop App", suggested_handle: "oidc-new" });
    const b = new PageClient(s.url);
    await b.get("/join");
    await b.post("/join", { user_code: j.user_code });
    await providerSignIn(b, "/account/oidc/start?flow=join", "new-login");
    const page = await b.get("/join");
    expect(page.html).toContain("You signed in with your identity provider as new@example.org");
    await b.post("/join/create", { handle: "oidc-new", display_name: "New Person" });
    const r = await s.ok("finish_join", { poll_token: j.poll_token });
    expect(r).toMatchObject({ status: "connected", created: true });
    expect((await s.ok("get_me", {}, r.api_key)).verification.email).toBe(true);
  });

  test("a second handle with the same verified e-mail is detected and the human is told", async () => {
    const twin = await s.register("oidc-twin");
    const b = new PageClient(s.url);
    await b.get("/account");
    await providerSignIn(b, "/account/oidc/start?flow=account", "twin-login");
    const page = await signInWithCode(s, b, "account", "oidc-twin", twin.key);
    expect(page.html).toContain("also verified on <strong>@oidc-ann</strong>");
  });

  test("an unverified e-mail from the provider does not verify the handle", async () => {
    const u = await s.register("oidc-unverified");
    const b = new PageClient(s.url);
    await b.get("/account");
    await providerSignIn(b, "/account/oidc/start?flow=account", "unverified-login");
    await signInWithCode(s, b, "account", "oidc-unverified", u.key);
    expect((await s.ok("get_me", {}, u.key)).verification.email).toBe(false);
  });

  test("a callback that this browser did not start, or with a wrong state, is refused", async () => {
    const b = new PageClient(s.url);
    expect((await b.get("/account/oidc/callback?code=x&state=y")).status).toBe(400);
    const start = await b.get("/account/oidc/start?flow=account");
    const state = new URL(start.location!).searchParams.get("state")!;
    expect((await b.get(`/account/oidc/callback?code=x&state=${state}x`)).status).toBe(400);
    // the sign-in is used up by the failed attempt: the right state no longer works either
    expect((await b.get(`/account/oidc/callback?code=x&state=${state}`)).status).toBe(400);
    const other = await b.get("/account/oidc/start?flow=account");
    const st2 = new URL(other.location!).searchParams.get("state")!;
    const denied = await b.get(`/account/oidc/callback?error=access_denied&state=${st2}`);
    expect(denied.status).toBe(400);
    expect(denied.html).toContain("did not sign you in");
    const third = await b.get("/account/oidc/start?flow=account");
    const st3 = new URL(third.location!).searchParams.get("state")!;
    const badCode = await b.get(`/account/oidc/callback?code=not-a-code&state=${st3}`);
    expect(badCode.status).toBe(502);
    expect((await b.get("/account/oidc/start?flow=elsewhere")).status).toBe(400);
  });
});

describe("svc serve --oidc-*", () => {
  const ROOT = `${import.meta.dir}/../..`;
  const env = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_"))) as Record<string, string>;

  test("the three flags go together", async () => {
    const proc = Bun.spawn(["bun", "run", "cli/main.ts", "serve", "--port", "0", "--db", `file:${s.dir}/cli-partial.db`, "--oidc-issuer", issuer], {
      cwd: ROOT,
      env: env(),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await proc.exited).not.toBe(0);
    expect(await new Response(proc.stderr).text()).toContain("--oidc-issuer, --oidc-client-id and --oidc-client-secret must be given together");
  });

  test("with all three, the pages offer the provider", async () => {
    const proc = Bun.spawn(
      [
        "bun",
        "run",
        "cli/main.ts",
        "serve",
        "--port",
        "0",
        "--db",
        `file:${s.dir}/cli-oidc.db`,
        "--log-level",
        "info",
        "--oidc-issuer",
        issuer,
        "--oidc-client-id",
        CLIENT_ID,
        "--oidc-client-secret",
        CLIENT_SECRET,
      ],
      { cwd: ROOT, env: env(), stdout: "pipe", stderr: "pipe" },
    );
    try {
      const reader = proc.stdout.getReader();
      let buffered = "";
      while (!buffered.includes("svc listening on")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`svc serve exited: ${await new Response(proc.stderr).text()}`);
        buffered += new TextDecoder().decode(value);
      }
      const line = buffered.split("\n").find((l) => l.includes("svc listening on"))!;
      const url: string = JSON.parse(line).url;
      const page = await (await fetch(`${url}/account`)).text();
      expect(page).toContain('href="/account/oidc/start?flow=account"');
      const start = await fetch(`${url}/account/oidc/start?flow=account`, { redirect: "manual" });
      expect(start.headers.get("location")).toStartWith(`${issuer}/auth?`);
      expect(new URL(start.headers.get("location")!).searchParams.get("client_id")).toBe(CLIENT_ID);
    } finally {
      proc.kill();
      await proc.exited;
    }
  });
});
