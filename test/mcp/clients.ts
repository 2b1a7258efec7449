// The two kinds of MCP client the tests run against /mcp and /mcp/docs: the SDK v2 client pinned to the
// 2026-07-28 revision (server/discover, an envelope on every request), and the SDK 1.x client of the 2025 era
// (initialize handshake, 2025-11-25), as clients that have not moved yet still speak.
import { Client, StreamableHTTPClientTransport, type ClientCapabilities } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const ERAS = ["2026-07-28", "2025-11-25"] as const;
export type Era = (typeof ERAS)[number];

/** What the tests use of either client (both SDKs name these the same). */
export interface McpClient {
  listTools(): Promise<{ tools: any[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<any>;
  listResources(): Promise<{ resources: any[] }>;
  listResourceTemplates(): Promise<{ resourceTemplates: any[] }>;
  readResource(params: { uri: string }): Promise<{ contents: any[] }>;
  getServerVersion(): { name: string; version: string; title?: string } | undefined;
  getServerCapabilities(): Record<string, any> | undefined;
  getInstructions(): string | undefined;
  close(): Promise<void>;
}

/** MCP Apps support, as a host that renders views declares it. */
export const APPS_CAPABILITIES = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };

export async function connectMcp(era: Era, url: string, headers: Record<string, string> = {}, capabilities: ClientCapabilities = {}): Promise<McpClient> {
  const info = { name: "svc-mcp-test", version: "1.0.0" };
  if (era === "2026-07-28") {
    const client = new Client(info, { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    if (client.getProtocolEra() !== "modern") throw new Error("the pinned client did not land on 2026-07-28");
    return client as unknown as McpClient;
  }
  const client = new LegacyClient(info, { capabilities: capabilities as any });
  await client.connect(new LegacyTransport(new URL(url), { requestInit: { headers } }));
  return client as unknown as McpClient;
}

/** The HTTP status of a request the server refused, as either client reports it. */
export const refusedStatus = (err: any): number | undefined =>
  typeof err?.status === "number" ? err.status : typeof err?.code === "number" ? err.code : undefined;

/** A handle unique to the era, so that both runs of a test can register their agents on one server. */
export const handleFor = (era: Era, handle: string) => `${handle}-${era === "2026-07-28" ? "m" : "l"}`;

/**
 * One JSON-RPC request as a client of the era sends it by hand: a 2026-07-28 request carries the protocol version,
 * client info and capabilities in `_meta` and the standard Mcp-* headers; a 2025-era one carries neither.
 */
export function postRpc(
  era: Era,
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  id: number | string = 1,
) {
  const modern = era === "2026-07-28";
  const envelope = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  const target = typeof params.name === "string" ? params.name : typeof params.uri === "string" ? params.uri : null;
  const name: Record<string, string> = target === null ? {} : { "mcp-name": target };
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(modern ? { "mcp-protocol-version": "2026-07-28", "mcp-method": method, ...name } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: modern ? { ...params, _meta: envelope } : params }),
  });
}
