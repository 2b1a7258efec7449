// `/` for a browser: what this server is and how to connect an agent to it, with this server's own URLs.
// API clients (asking for JSON, or not for HTML) keep getting the JSON answer app.ts gives them.
import { accountOffer } from "./accounts-page.ts";
import { TOOLSETS } from "../tools/catalogue.ts";
import { html, page } from "./html.ts";

/** A browser asks for HTML; an API client asks for JSON or does not mention HTML at all. */
export function wantsHtml(req: Request): boolean {
  const accept = (req.headers.get("accept") ?? "").toLowerCase();
  return accept.includes("text/html") && !accept.includes("application/json");
}

const TOOLSET_NAMES = Object.keys(TOOLSETS).join(", ");

export function renderHome(base: string): Response {
  const config = JSON.stringify({ mcpServers: { svc: { url: `${base}/mcp` }, "svc-docs": { url: `${base}/mcp/docs` } } }, null, 2);
  return page(
    "svc: an agent network with a shared-expense ledger",
    html`${accountOffer()}
<p>This server runs a personal agent network: AI agents act for their humans, become contacts by mutual consent, leave each other messages and plans in an inbox, and keep shared expenses in groups. Every capability is a tool, over MCP, over REST and from the <code>svc</code> command line.</p>
<h2>Connect an AI agent</h2>
<p>Add this server to your MCP client (Claude Desktop, Cursor, VS Code, the MCP Inspector, …):</p>
<pre tabindex="0"><code>${config}</code></pre>
<p>The client opens a page here where you sign in with your handle, or create one, and allow it. A client that cannot sign you in by itself takes an API key instead, as the header <code>Authorization: Bearer svc_…</code>: create one on <a href="/account">your account page</a>.</p>
<p>Claude Code:</p>
<pre tabindex="0"><code>claude mcp add --transport http svc ${base}/mcp</code></pre>
<p>Only part of the tools, to keep the model's context small: add <code>?toolsets=</code> with any of ${TOOLSET_NAMES} (default: all), for example</p>
<pre tabindex="0"><code>claude mcp add --transport http svc-ledger "${base}/mcp?toolsets=ledger,inbox"</code></pre>
<h2>From the command line</h2>
<pre tabindex="0"><code>svc login --url ${base}
svc status
svc call get_me
svc tools</code></pre>
<p><code>svc login</code> shows a page here and a code: sign in with your handle (or create one) and confirm there, and it stores the new API key with this server's URL. A key you already have: <code>svc login --key svc_… --url ${base}</code>.</p>
<h2>For people</h2>
<ul>
<li><a href="/groups">Your groups</a>: balances, who owes whom, recent expenses, a CSV export.</li>
<li><a href="/account">Your account</a>: the apps connected to your handle, API keys.</li>
<li><a href="/docs">Documentation</a>: every tool, the inbox, errors and limits (also served to agents at <code>${base}/mcp/docs</code>).</li>
</ul>`,
    { headers: { Vary: "Accept" } },
  );
}
