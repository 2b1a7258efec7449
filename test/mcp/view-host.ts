/// <reference lib="dom" />
// A minimal MCP Apps host, bundled for the browser by test/mcp/views.test.ts: it connects to svc's /mcp with the
// SDK v2 client as a host that renders views, finds the tool's view in its _meta.ui, renders the ui:// resource
// in a sandboxed frame, and drives it with ext-apps' AppBridge: the tool's input and result in, the view's
// tools/call requests out to the server. What the view asked for is kept in window.hostLog.
import { AppBridge, PostMessageTransport, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

declare global {
  interface Window {
    hostLog: { calls: { name: string; arguments: Record<string, unknown> }[]; ready: boolean; error?: string; html?: string };
    setTheme(theme: "light" | "dark"): void;
  }
}

const VIEW_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; media-src data:; connect-src 'none'; frame-src 'none'; object-src 'none'";
const params = new URLSearchParams(location.search);
const tool = params.get("tool")!;
const args = JSON.parse(params.get("args") ?? "{}") as Record<string, unknown>;
const theme = (params.get("theme") ?? "light") as "light" | "dark";
window.hostLog = { calls: [], ready: false };

async function main() {
  const client = new Client(
    { name: "svc-test-host", version: "1.0.0" },
    {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } } as never,
    },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL("/mcp", location.href), { requestInit: { headers: { authorization: `Bearer ${params.get("key")}` } } }),
  );
  const listed = (await client.listTools()).tools.find((t) => t.name === tool)!;
  const uri = getToolUiResourceUri(listed)!;
  const resource = (await client.readResource({ uri })).contents[0] as { text: string; mimeType: string };
  window.hostLog.html = resource.text;

  const frame = document.getElementById("view") as HTMLIFrameElement;
  const bridge = new AppBridge(
    null,
    { name: "svc-test-host", version: "1.0.0" },
    { serverTools: {}, openLinks: {} },
    { hostContext: { theme, displayMode: "inline", containerDimensions: { maxWidth: 360 } } },
  );
  // every tool call of the view goes to the server through this host, and is logged
  bridge.oncalltool = async (call) => {
    window.hostLog.calls.push({ name: call.name, arguments: (call.arguments ?? {}) as Record<string, unknown> });
    return client.callTool(call) as never;
  };
  bridge.onsizechange = ({ height }) => {
    if (height) frame.style.height = `${height}px`;
  };
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult((await client.callTool({ name: tool, arguments: args })) as never);
    window.hostLog.ready = true;
  };
  window.setTheme = (next) => bridge.setHostContext({ theme: next, displayMode: "inline", containerDimensions: { maxWidth: 360 } });
  // listening before the view loads, as its first message is ui/initialize; the frame gets the restrictive
  // policy a host applies to a view that declares no domains (MCP Apps, "Host Behavior")
  await bridge.connect(new PostMessageTransport(frame.contentWindow!, frame.contentWindow!));
  frame.srcdoc = resource.text.replace("<head>", `<head><meta http-equiv="Content-Security-Policy" content="${VIEW_CSP}">`);
}

main().catch((err) => {
  window.hostLog.error = String(err?.stack ?? err);
});
