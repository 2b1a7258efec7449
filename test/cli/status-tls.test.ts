// svc status against a server whose TLS certificate this machine does not trust: one clear sentence on what is
// wrong, then what to do, not the two run together.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { makeCertificate } from "../auth/tls-fixture.ts";
import { ensureBuilt, svc } from "./bin.ts";

let server: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  await ensureBuilt();
  const { cert, key } = makeCertificate("localhost");
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert, key }, fetch: () => Response.json({ ok: true, data: {} }) });
}, 60_000);
afterAll(() => server?.stop(true));

test("a self-signed certificate: the problem says the certificate is not trusted, and what to do, as two sentences", async () => {
  const r = await svc(["status", "--url", `https://localhost:${server.port}`]);
  expect(r.code).not.toBe(0);
  // Piped, status prints JSON; its problem is the line a terminal shows after "problem: ".
  const { problem, reachable } = r.json();
  expect(reachable).toBe(false);
  expect(problem).toContain("its TLS certificate is not trusted here");
  expect(problem).toMatch(/\)\. Trust the certificate's authority with NODE_EXTRA_CA_CERTS/);
});
