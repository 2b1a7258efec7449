// suggested_next names each tool once, also when a tool builds it from several sources.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient } from "../web/page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

test("get_inbox with a sign-in code waiting: its item's ack_inbox and the read's ack_inbox are one", async () => {
  const alice = await s.register("next-alice");
  const b = new PageClient(s.url);
  await b.get("/account");
  expect((await b.post("/account/signin/code", { handle: "next-alice", flow: "account" })).status).toBe(303);
  const inbox = await s.ok("get_inbox", {}, alice.key);
  const item = inbox.items.find((i: any) => i.type === "auth.join_code");
  expect(item).toMatchObject({ requires_action: true, resolved: false, suggested_tools: ["ack_inbox"] });
  expect(inbox.suggested_next).toEqual(["ack_inbox"]);
});
