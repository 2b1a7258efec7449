// The documentation pages, generated from the registry (TOOLS, ERROR_CODES) and the docs/ folder embedded at build time.
import auth from "../../docs/auth.md" with { type: "text" };
import cli from "../../docs/cli.md" with { type: "text" };
import federation from "../../docs/federation.md" with { type: "text" };
import inboxItemTypes from "../../docs/inbox-item-types.md" with { type: "text" };
import ledger from "../../docs/ledger.md" with { type: "text" };
import limits from "../../docs/limits.md" with { type: "text" };
import mcp from "../../docs/mcp.md" with { type: "text" };
import overview from "../../docs/overview.md" with { type: "text" };
import { inboxTypesTable } from "../contract/inbox-types.ts";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import { TOOLS, describeTool, findTool } from "../tools/catalogue.ts";
import type { Tool } from "../tools/define.ts";
import { exampleAnswer } from "../tools/example-answer.ts";

export interface DocPage {
  uri: string;
  name: string;
  title: string;
  description: string;
  markdown: string;
}

const URI = "svc://docs";
export const toolUri = (name: string) => `${URI}/tools/${name}`;
export const TOOL_URI_TEMPLATE = `${URI}/tools/{name}`;

/** When each error code is answered; a Record so a new code cannot be left undocumented. */
export const ERROR_CONDITIONS: Record<ErrorCode, string> = {
  VALIDATION_ERROR: "the arguments do not match the input schema, or break a rule of the tool; details.issues names each field",
  UNAUTHENTICATED: "the credential is missing, invalid, expired or revoked",
  FORBIDDEN: "the credential lacks the scope the tool needs (details.required_scope), or may not do this",
  NOT_FOUND: "the tool does not exist, or an object named in the arguments does not exist or is not visible to the caller",
  CONFLICT: "the current state does not allow the call (e.g. an archived group, a stale expected_version)",
  IDEMPOTENCY_KEY_REUSED: "the idempotency_key was already used for a different call",
  RATE_LIMITED: "too many calls; wait retry_after seconds (Retry-After header) and retry with the same idempotency key",
  INTERNAL: "an unexpected server fault; nothing internal is leaked, quote request_id",
  STORAGE_UNAVAILABLE:
    "the server cannot store writes right now: its disk is full, failing or read-only; nothing of the call was stored, reads keep working; retry after retry_after seconds with the same idempotency key",
};

export interface ToolError {
  code: ErrorCode;
  status: number;
  when: string;
}

/** The errors a tool can answer, from what the pipeline does with it (credential, scope, idempotency) and its inputs. */
export function toolErrors(t: Tool): ToolError[] {
  const namesSomething = Object.keys(t.input.shape).some((k) => k !== "idempotency_key");
  const codes: ErrorCode[] = [
    "VALIDATION_ERROR",
    ...(t.isPublic ? [] : (["UNAUTHENTICATED", "FORBIDDEN"] as const)),
    ...(namesSomething ? (["NOT_FOUND"] as const) : []),
    ...(t.isWrite ? (["CONFLICT"] as const) : []),
    ...(t.idempotent ? (["IDEMPOTENCY_KEY_REUSED"] as const) : []),
    "RATE_LIMITED",
    "INTERNAL",
    "STORAGE_UNAVAILABLE",
  ];
  return codes.map((code) => ({ code, status: ERROR_CODES[code].status, when: ERROR_CONDITIONS[code] }));
}

const json = (value: unknown) => "```json\n" + JSON.stringify(value, null, 2) + "\n```";
const firstSentence = (text: string) => text.split(/(?<=\.)\s/)[0]!;

export function toolPage(t: Tool, baseUrl: string): DocPage {
  const d = describeTool(t);
  const args = t.example;
  const credential = t.isPublic ? "none (public tool)" : `\`Authorization: Bearer <API_KEY or access token>\` with scope \`${t.scope}\``;
  const markdown = [
    `# ${t.name}: ${t.title}`,
    "",
    t.description,
    "",
    `- Tags: ${t.tags.join(", ")}`,
    `- Credential: ${credential}`,
    `- Idempotent: ${t.idempotent ? (t.replay ? "yes, with idempotency_key" : "the key prevents a repeat, but the answer is not replayed") : "no, call once"}`,
    `- REST: \`POST ${baseUrl}/v1/tools/${t.name}\`; MCP: tool \`${t.name}\` at \`${baseUrl}/mcp\``,
    "",
    "## Example call",
    "",
    "REST body (MCP: the same object as `arguments` of `tools/call`):",
    "",
    json(args),
    "",
    "## Example answer",
    "",
    'REST: `{"ok": true, "data": ..., "request_id": ...}` with this `data`; MCP: the same object as `structuredContent`, and as JSON text.',
    "",
    json(exampleAnswer(t)),
    "",
    "## Errors",
    "",
    "Each is the error envelope (over MCP a result with `isError: true`).",
    "",
    "| code | HTTP | when |",
    "|---|---|---|",
    ...toolErrors(t).map((e) => `| ${e.code} | ${e.status} | ${e.when} |`),
    "",
    "## Input schema",
    "",
    json(d.input_schema),
    "",
    "## Output schema",
    "",
    json(d.output_schema),
    "",
  ].join("\n");
  return { uri: toolUri(t.name), name: t.name, title: t.title, description: firstSentence(t.description), markdown };
}

function errorsPage(): DocPage {
  const markdown = [
    "# Error codes",
    "",
    "Every error, over REST and MCP, is one envelope:",
    "",
    json({
      ok: false,
      error: {
        code: "VALIDATION_ERROR",
        message: "Invalid arguments: handle: ...",
        suggested_action: "...",
        details: { issues: [{ path: "handle", message: "..." }] },
      },
      request_id: "...",
    }),
    "",
    "`details` and `retry_after` (seconds) are optional. The HTTP status follows the code. Over MCP the",
    "envelope is a tool result with `isError: true` (as `structuredContent` and as JSON text); a call",
    "that needs a credential and lacks a valid one is answered HTTP 401 with a `WWW-Authenticate` challenge.",
    "",
    "| code | HTTP | when | what to do |",
    "|---|---|---|---|",
    ...Object.entries(ERROR_CODES).map(([code, e]) => `| ${code} | ${e.status} | ${ERROR_CONDITIONS[code as ErrorCode]} | ${e.action} |`),
    "",
  ].join("\n");
  return { uri: `${URI}/errors`, name: "errors", title: "Error codes", description: "The error envelope and every error code with its HTTP status.", markdown };
}

function toolsIndexPage(): DocPage {
  const markdown = [
    `# The tool catalogue (${TOOLS.length} tools)`,
    "",
    "| tool | tags | credential | what it does |",
    "|---|---|---|---|",
    ...TOOLS.map((t) => `| [${t.name}](${toolUri(t.name)}) | ${t.tags.join(", ")} | ${t.isPublic ? "none" : t.scope} | ${t.title} |`),
    "",
  ].join("\n");
  return { uri: `${URI}/tools`, name: "tools", title: "Tool catalogue", description: "Every tool with its tags and the credential it needs.", markdown };
}

const folderPage = (name: string, title: string, description: string, markdown: string, baseUrl: string): DocPage => ({
  uri: `${URI}/${name}`,
  name,
  title,
  description,
  // The inbox types table comes from the registry deliver() reads, so the page cannot drift from the items.
  markdown: markdown.replaceAll("{base_url}", baseUrl).replace("{inbox_types_table}", () => inboxTypesTable()),
});

let cache: { baseUrl: string; pages: DocPage[] } | undefined;

/** Every page, in reading order; built once per base URL. */
export function docPages(baseUrl: string): DocPage[] {
  if (cache?.baseUrl !== baseUrl) {
    const pages = [
      folderPage("overview", "Service overview", "What svc is, how to get a credential and how a session goes.", overview, baseUrl),
      toolsIndexPage(),
      folderPage("inbox-item-types", "Inbox item types", "Every inbox item type with its payload, refs and the tools that act on it.", inboxItemTypes, baseUrl),
      folderPage(
        "ledger",
        "The ledger",
        "Money and currencies, friends without an account (placeholders and claiming them), refunds, spending totals, settling up in the fewest transfers, payments (across groups too) and voiding, balances per currency, the export, importing a Splitwise export.",
        ledger,
        baseUrl,
      ),
      errorsPage(),
      folderPage("limits", "Limits", "Field, time and rate limits.", limits, baseUrl),
      folderPage("mcp", "MCP", "Connecting an MCP client: configuration, authentication, how tools and errors look.", mcp, baseUrl),
      folderPage("auth", "Authentication", "API keys, OAuth 2.1 for MCP clients, client ID metadata documents, joining a handle made twice.", auth, baseUrl),
      folderPage(
        "federation",
        "Federation",
        "Agents on different svc servers: addresses, what crosses between servers, what never does, the threat model.",
        federation,
        baseUrl,
      ),
      folderPage("cli", "Command line", "svc login, status, call, tools and the admin commands.", cli, baseUrl),
      ...TOOLS.map((t) => toolPage(t, baseUrl)),
    ];
    cache = { baseUrl, pages };
  }
  return cache.pages;
}

export const findPage = (baseUrl: string, uri: string) => docPages(baseUrl).find((p) => p.uri === uri);

export function toolDoc(name: string, baseUrl: string) {
  const t = findTool(name);
  if (!t) return null;
  const d = describeTool(t);
  return {
    name: t.name,
    uri: toolUri(t.name),
    title: t.title,
    description: t.description,
    tags: t.tags,
    public: d.public,
    required_scope: d.required_scope,
    idempotent: t.idempotent,
    input_schema: d.input_schema,
    output_schema: d.output_schema,
    example: { arguments: t.example, answer: exampleAnswer(t) },
    errors: toolErrors(t),
    markdown: findPage(baseUrl, toolUri(t.name))!.markdown,
  };
}

export interface SearchHit {
  uri: string;
  title: string;
  snippet: string;
  score: number;
}

const terms = (text: string) => [...new Set(text.toLowerCase().match(/[\p{L}\p{N}_.-]{2,}/gu) ?? [])];

function occurrences(haystack: string, needle: string): number {
  let n = 0;
  for (let i = haystack.indexOf(needle); i !== -1 && n < 20; i = haystack.indexOf(needle, i + needle.length)) n++;
  return n;
}

function snippet(text: string, term: string): string {
  const at = Math.max(0, text.toLowerCase().indexOf(term));
  const start = Math.max(0, at - 80);
  const piece = text
    .slice(start, at + term.length + 120)
    .replace(/\s+/g, " ")
    .trim();
  return `${start > 0 ? "…" : ""}${piece}${at + term.length + 120 < text.length ? "…" : ""}`;
}

/** Pages matching the query's words: more words matched first, then a page named after a word, then by frequency. */
export function searchDocs(baseUrl: string, query: string, limit: number): SearchHit[] {
  const words = terms(query);
  const hits: SearchHit[] = [];
  for (const page of docPages(baseUrl)) {
    const body = page.markdown.toLowerCase();
    const heading = `${page.name} ${page.title}`.toLowerCase();
    const matched = words.filter((w) => body.includes(w) || heading.includes(w));
    if (!matched.length) continue;
    const named = matched.some((w) => w === page.name) ? 50 : 0;
    const frequency = matched.reduce((sum, w) => sum + occurrences(body, w) + (heading.includes(w) ? 10 : 0), 0);
    hits.push({ uri: page.uri, title: page.title, snippet: snippet(page.markdown, matched[0]!), score: matched.length * 100 + named + frequency });
  }
  return hits.sort((a, b) => b.score - a.score || a.uri.localeCompare(b.uri)).slice(0, limit);
}
