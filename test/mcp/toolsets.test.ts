// Toolsets: a client asks /mcp for only the parts of the catalogue it wants (?toolsets=ledger,inbox), in both eras.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOOLS, TOOLSETS } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { ERAS, connectMcp, postRpc, refusedStatus } from "./clients.ts";

/** What every session lists whatever its toolsets, and without a credential the tools that work without one. */
const ESSENTIALS = ["get_me", "get_inbox", "ack_inbox"];
const WAYS_IN = ["register_agent", "join_network", "finish_join"];

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
  test("?toolsets=ledger,inbox lists those tools, get_me and the ways in, in catalogue order", async () => {
    const client = await connectMcp(era, `${s.url}/mcp?toolsets=ledger,inbox`);
    try {
      const { tools } = await client.listTools();
      const wanted = new Set([...TOOLSETS.ledger!, ...TOOLSETS.inbox!].map((t) => t.name));
      for (const name of [...ESSENTIALS, ...WAYS_IN]) wanted.add(name);
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

  test("a tool outside the session's toolsets is a NOT_FOUND result naming its toolset", async () => {
    const client = await connectMcp(era, `${s.url}/mcp?toolsets=plans`);
    try {
      const result = await client.callTool({ name: "create_group", arguments: { name: "Trip", currency: "EUR" } });
      expect(result.isError).toBe(true);
      const { error } = JSON.parse(result.content[0].text);
      expect(error.code).toBe("NOT_FOUND");
      expect(error.details).toEqual({ toolset: "ledger" });
      expect(error.suggested_action).toContain("?toolsets=...,ledger");
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

/** The catalogue's tools an instructions text names, as whole words. */
const named = (text: string) => TOOLS.map((t) => t.name).filter((n) => new RegExp(`\\b${n}\\b`).test(text));

describe.each(ERAS)("every toolset keeps its own instructions true (%s)", (era) => {
  const sessions = [...Object.keys(TOOLSETS).map((set) => `?toolsets=${set}`), "?toolsets=ledger,inbox", ""];

  test.each(sessions)("with a credential, /mcp%s lists the essentials, and each tool its instructions name answers", async (query) => {
    const a = await s.register(`ts-${era === "2026-07-28" ? "m" : "l"}-${query.replace(/\W/g, "").slice(8, 20) || "all"}`);
    const client = await connectMcp(era, `${s.url}/mcp${query}`, { authorization: `Bearer ${a.key}` });
    try {
      const listed = new Set((await client.listTools()).tools.map((t: any) => t.name));
      for (const name of ESSENTIALS) expect(listed.has(name)).toBe(true);
      const instructions = client.getInstructions() ?? "";
      expect(instructions).toContain("get_me");
      const mentioned = named(instructions);
      expect(mentioned.filter((n) => !listed.has(n))).toEqual([]);
      // Each one is there to call: a success, or its own refusal of empty arguments; never "left out".
      for (const name of mentioned) {
        const result = await client.callTool({ name, arguments: {} });
        const error = result.isError ? JSON.parse(result.content[0].text).error : null;
        expect({ name, code: error?.code ?? "OK" }).toEqual({ name, code: expect.stringMatching(/^(OK|VALIDATION_ERROR)$/) });
      }
    } finally {
      await client.close();
    }
  });

  test.each(sessions)("without a credential, /mcp%s lists and names the ways in, and each named tool is there", async (query) => {
    const client = await connectMcp(era, `${s.url}/mcp${query}`);
    try {
      const listed = new Set((await client.listTools()).tools.map((t: any) => t.name));
      for (const name of [...ESSENTIALS, ...WAYS_IN]) expect(listed.has(name)).toBe(true);
      const instructions = client.getInstructions() ?? "";
      const mentioned = named(instructions);
      expect(mentioned).toEqual(expect.arrayContaining(WAYS_IN));
      expect(mentioned.filter((n) => !listed.has(n))).toEqual([]);
      for (const name of mentioned) {
        // A public tool refuses empty arguments; any other asks for a credential (HTTP 401), as a listed tool does.
        const outcome = await client.callTool({ name, arguments: {} }).then(
          (r: any) => (r.isError ? JSON.parse(r.content[0].text).error.code : "OK"),
          (err: any) => (refusedStatus(err) === 401 ? "401" : String(err)),
        );
        expect({ name, outcome }).toEqual({ name, outcome: WAYS_IN.includes(name) ? "VALIDATION_ERROR" : "401" });
      }
    } finally {
      await client.close();
    }
  });
});
