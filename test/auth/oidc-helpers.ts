// A real OpenID Connect provider (oidc-provider, in-process on loopback) beside a test server configured to use
// it, and a human signing in there through the provider's own pages.
import { expect } from "bun:test";
import { createServer } from "node:http";
import Provider from "oidc-provider";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient, type PageResponse } from "../web/page-client.ts";

export const CLIENT_ID = "svc-web";
export const CLIENT_SECRET = "provider-secret-for-svc-tests-0123456789";

export interface EmailClaims {
  email: string;
  email_verified: boolean;
}

export interface ServerWithProvider {
  s: TestServer;
  issuer: string;
  /**
   * Starts the provider sign-in at `startPath` in browser `b`; the provider's own pages are driven in a second cookie
   * jar (its origin) as `login`. Returns svc's answer to the callback.
   */
  providerSignIn(b: PageClient, startPath: string, login: string): Promise<PageResponse>;
  stop(): Promise<void>;
}

/** `accounts` gives each login name of the provider its e-mail claims. */
export async function startServerWithProvider(accounts: (login: string) => EmailClaims): Promise<ServerWithProvider> {
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  const s = await startTestServer({ oidc: { issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } });
  // The provider signs ID tokens with the real time; svc's clock is moved to it.
  s.clock.advance(Date.now() - s.clock.now().getTime());
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${s.url}/account/oidc/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id, ...accounts(id) }) }),
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AuthorizationCode: 60, IdToken: 3600, AccessToken: 3600 },
  });
  http.on("request", provider.callback());

  async function providerSignIn(b: PageClient, startPath: string, login: string): Promise<PageResponse> {
    const p = new PageClient(issuer);
    const start = await b.get(startPath);
    expect(start.status).toBe(303);
    expect(start.location).toStartWith(`${issuer}/auth?`);
    const auth = new URL(start.location!);
    expect(auth.searchParams.get("code_challenge_method")).toBe("S256");
    expect(auth.searchParams.get("nonce")).toBeTruthy();
    let r = await p.get(start.location!);
    for (let step = 0; step < 10; step++) {
      if (r.status >= 300 && r.status < 400) {
        const next = new URL(r.location!, issuer).toString();
        if (next.startsWith(s.url)) return b.get(next.slice(s.url.length));
        r = await p.get(next);
        continue;
      }
      const action = new URL(r.html.match(/action="([^"]+)"/)![1]!, issuer).toString();
      r = r.html.includes('value="login"')
        ? await p.post(action, { prompt: "login", login, password: "any" }, null)
        : await p.post(action, { prompt: "consent" }, null);
    }
    throw new Error("the provider never sent the browser back");
  }

  return {
    s,
    issuer,
    providerSignIn,
    async stop() {
      await s.stop();
      http.close();
    },
  };
}
