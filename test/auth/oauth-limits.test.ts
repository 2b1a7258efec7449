// The token endpoint's per-address limit: others behind the same address (a proxy, a NAT) spending it do not stop a
// client refreshing with a valid refresh token; failed grants still spend it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { grant, registerClient, tokenCall } from "./oauth-helpers.ts";

const LIMIT = 5;
let s: TestServer;
let human: Agent;
beforeAll(async () => {
  s = await startTestServer({ publicRateLimit: LIMIT });
  human = await s.register("ol-human");
});
afterAll(() => s.stop());

test("junk registrations exhaust the address's limit; a valid refresh still succeeds, a bad one is answered 429", async () => {
  const { client, tokens } = await grant(s, new PageClient(s.url), human);
  let junk = 0;
  while ((await registerClient(s, { client_name: `junk ${junk}` })).status !== 429) expect(++junk).toBeLessThan(LIMIT);
  const refreshed = await tokenCall(s, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
  expect(refreshed.status).toBe(200);
  expect(refreshed.body.access_token).toBeString();
  // the rotated token works again, still past the limit
  const again = await tokenCall(s, { grant_type: "refresh_token", refresh_token: refreshed.body.refresh_token, client_id: client.client_id });
  expect(again.status).toBe(200);
  // guesses, an unknown client and other grant types stay limited
  const guess = await tokenCall(s, { grant_type: "refresh_token", refresh_token: "rt_guess", client_id: client.client_id });
  expect(guess.status).toBe(429);
  expect(Number(guess.headers.get("retry-after"))).toBeGreaterThan(0);
  expect((await tokenCall(s, { grant_type: "refresh_token", refresh_token: again.body.refresh_token, client_id: "nope" })).status).toBe(429);
  expect((await tokenCall(s, { grant_type: "authorization_code", code: "x", client_id: client.client_id })).status).toBe(429);
  // the valid token was not spent by the refused attempt with the wrong client
  expect((await tokenCall(s, { grant_type: "refresh_token", refresh_token: again.body.refresh_token, client_id: client.client_id })).status).toBe(200);
});

test("failed refresh grants spend the address's limit as before", async () => {
  const t = await startTestServer({ publicRateLimit: 2 });
  try {
    const bad = () => tokenCall(t, { grant_type: "refresh_token", refresh_token: "rt_nope", client_id: "nope" }).then((r) => r.status);
    expect([await bad(), await bad(), await bad()]).toEqual([401, 401, 429]);
  } finally {
    await t.stop();
  }
});
