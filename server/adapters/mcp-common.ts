// What the tools server (/mcp) and the documentation server (/mcp/docs) share.
import { Server, type ServerOptions } from "@modelcontextprotocol/sdk/server/index.js";
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { CancelledNotificationSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

export const SERVER_VERSION = "0.9.0";

/** A fresh server for one HTTP request (stateless mode). */
export function statelessServer(name: string, title: string, options: ServerOptions): Server {
  const server = new Server({ name, title, version: SERVER_VERSION }, options);
  // Every answer goes back in this one HTTP response: a cancellation sent in the same batch could stop
  // nothing worth stopping, and acting on it would leave the response never sent and the request hanging.
  server.setNotificationHandler(CancelledNotificationSchema, () => undefined);
  return server;
}

/**
 * A tool result: the answer as structuredContent and as JSON text (for clients that ignore structured output).
 * An error envelope goes in the text only: structuredContent must conform to the tool's outputSchema, and the
 * SDK's own client (1.32) rejects a non-conforming one even on an isError result (typescript-sdk issue 1943).
 */
export function toolResult(body: Record<string, unknown>, isError: boolean, meta: Record<string, unknown>): CallToolResult {
  const content: CallToolResult["content"] = [{ type: "text", text: JSON.stringify(body) }];
  return isError ? { content, isError: true, _meta: meta } : { content, structuredContent: body, isError: false, _meta: meta };
}

const AnyToolCall = z.object({
  method: z.literal("tools/call"),
  params: z.looseObject({ name: z.string(), arguments: z.unknown().optional() }),
});

/**
 * Handles tools/call with whatever `arguments` came, so that a non-object is a VALIDATION_ERROR result with the
 * envelope, as over REST, rather than a JSON-RPC error. Registered on Protocol because Server's own override
 * refuses such a request against the SDK's CallToolRequestSchema before any handler runs.
 */
export function onToolCall(server: Server, handler: (name: string, args: unknown) => Promise<CallToolResult> | CallToolResult): void {
  Protocol.prototype.setRequestHandler.call(server, AnyToolCall, (req: z.output<typeof AnyToolCall>) => handler(req.params.name, req.params.arguments ?? {}));
}
