// What a connecting agent sees, call by call (issue 47): each call that misled an agent given only the MCP
// instructions, tools/list, errors and suggested_next, made again over MCP with the SDK client.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { connectMcp, postRpc, type McpClient } from "./clients.ts";

let s: TestServer;
const clients: McpClient[] = [];
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await s.stop();
});

async function connect(apiKey: string | null, query = ""): Promise<McpClient> {
  const client = await connectMcp("2026-07-28", `${s.url}/mcp${query}`, apiKey ? { authorization: `Bearer ${apiKey}` } : {});
  clients.push(client);
  return client;
}

/** A tools/call: the answer's data, or the error envelope's error. */
async function call(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<{ data?: any; error?: any }> {
  const result: any = await client.callTool({ name, arguments: args });
  const body = JSON.parse(result.content[0].text);
  return result.isError ? { error: body.error } : { data: body };
}

describe("hints", () => {
  test("an unknown tool over MCP names the nearest tool, with a hint for MCP too", async () => {
    const a = await s.register("hint-tool");
    const client = await connect(a.key);
    const { error } = await call(client, "get_balance", { group_id: crypto.randomUUID() });
    expect(error.code).toBe("NOT_FOUND");
    expect(error.message).toContain("did you mean get_balances?");
    expect(error.details).toEqual({ did_you_mean: "get_balances" });
    expect(error.suggested_action).toContain("tools/list");
    expect((await call(client, "balances")).error.details).toEqual({ did_you_mean: "get_balances" });
    expect((await call(client, "zzz")).error.details).toBeUndefined();
  });

  test("UNAUTHENTICATED tells a human who already has a handle to join it, not to register again", async () => {
    const res = await postRpc("2026-07-28", `${s.url}/mcp`, "tools/call", { name: "get_me", arguments: {} });
    expect(res.status).toBe(401);
    const { error } = (await res.json()) as any;
    const action: string = error.data.error.suggested_action;
    expect(action).toContain("join_network");
    expect(action.indexOf("join_network")).toBeLessThan(action.indexOf("register_agent"));
    expect(action).toContain("new to svc");
  });
});
