// A refused fetch says nothing of how a name resolved: a name that resolves to loopback and one that does not resolve
// at all are refused in the same words, so the refusals cannot map the server's own network or DNS.
import { describe, expect, test } from "bun:test";
import { startTestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";
import { authorizePath, pkce } from "./oauth-helpers.ts";

describe("SSRF refusals", () => {
  test("a client_id on a name that resolves to loopback and one on a name that does not resolve get the same refusal", async () => {
    const s = await startTestServer();
    try {
      const b = new PageClient(s.url);
      const refusal = async (clientId: string) => {
        const r = await b.get(authorizePath({ client_id: clientId, code_challenge: pkce().challenge }));
        expect(r.status).toBe(400);
        const text = r.html.match(/could not be fetched\.[^<]*/)?.[0];
        expect(text).toBeDefined();
        return text!;
      };
      const loopback = await refusal("https://localhost:9/client.json");
      const nowhere = await refusal("https://svc-test.invalid/client.json");
      expect(loopback).toBe(nowhere);
      for (const word of ["loopback", "private", "non-public address"]) expect(loopback).not.toContain(word);
    } finally {
      await s.stop();
    }
  });
});
