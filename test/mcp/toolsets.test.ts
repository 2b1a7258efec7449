// Toolsets: a client asks /mcp for only the parts of the catalogue it wants (?toolsets=ledger,inbox), in both eras.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOOLS, TOOLSETS } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { ERAS, connectMcp, postRpc } from "./clients.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

test("every tool belongs to exactly one toolset", () => {
  const named = Object.values(TOOLSETS).flat();
  expect(named.map((t) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
});

describe.each(ERAS)("a %s client", (era) => {
  test("?toolsets=ledger,inbox lists only those tools, in catalogue order", async () => {
    const client = await connectMcp(era, `${s.url}/mcp?toolsets=ledger,inbox`);
    try {
      const { tools } = await client.listTools();
      const wanted = new Set([...TOOLSETS.ledger!, ...TOOLSETS.inbox!].map((t) => t.name));
      expect(tools.map((t: any) => t.name)).toEqual(TOOLS.filter((t) => wanted.has(t.name)).map((t) => t.name));
    } finally {
      await client.close();
    }
  });

  test("without ?toolsets every tool is listed", async () => {
    const client = await connectMcp(era, `${s.url}/mcp`);
    try {
      expect((await client.listTools()).tools).toHaveLength(TOOLS.length);
    } finally {
      await client.close();
    }
  });

  test("a tool outside the session's toolsets is a NOT_FOUND result", async () => {
    const client = await connectMcp(era, `${s.url}/mcp?toolsets=plans`);
    try {
      const result = await client.callTool({ name: "register_agent", arguments: { handle: "nobody", display_name: "Nobody" } });
      expect(result.isError).toBe(true);
      expect(JSON.parse(result.content[0].text).error.code).toBe("NOT_FOUND");
    } finally {
      await client.close();
    }
  });

  test("an unknown toolset is refused with the names of the known ones", async () => {
    const res = await postRpc(era, `${s.url}/mcp?toolsets=ledger,bogus`, "tools/list");
    expect(res.status).toBe(400);
    const body: any = await res.json();
    expect(body.error.message).toContain("'bogus'");
    for (const name of Object.keys(TOOLSETS)) expect(body.error.message).toContain(name);
  });
});

test("the home page's MCP snippet shows how to ask for toolsets, with their names", async () => {
  const html = await (await fetch(`${s.url}/`, { headers: { accept: "text/html" } })).text();
  expect(html).toContain(`${s.url}/mcp?toolsets=ledger,inbox`);
  for (const name of Object.keys(TOOLSETS)) expect(html).toContain(name);
});

test("a session without a credential is told both ways in: an API key and OAuth", async () => {
  const client = await connectMcp("2026-07-28", `${s.url}/mcp`);
  try {
    const instructions = client.getInstructions() ?? "";
    expect(instructions).toContain("register_agent");
    expect(instructions).toContain("Authorization: Bearer");
    expect(instructions).toContain("OAuth");
    expect(instructions).toContain(`${s.url}/.well-known/oauth-protected-resource`);
  } finally {
    await client.close();
  }
});
