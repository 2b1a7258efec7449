// The read-only documentation MCP server at {base_url}/mcp/docs: no credential, no database, pages from server/docs.
import { ResourceNotFoundError, type Server, type Tool as McpTool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { docPages, findPage, searchDocs, toolDoc, TOOL_URI_TEMPLATE } from "../docs/pages.ts";
import { AppError } from "../errors.ts";
import { zodIssues } from "../tools/arguments.ts";
import { toolJsonSchema } from "../tools/json-schema.ts";
import { onToolCall, statelessServer, toolResult } from "./mcp-common.ts";

const DOCS_INSTRUCTIONS =
  "Read-only documentation of svc. Start with the resource svc://docs/overview; svc://docs/tools lists every tool. " +
  "search_docs finds pages by words; get_tool_doc gives one tool's purpose, schemas, example call and answer, and errors.";

const SearchInput = z.strictObject({
  query: z.string().min(1).max(200).describe("Words to look for, e.g. 'idempotency' or 'split expense'"),
  limit: z.number().int().min(1).max(50).optional().describe("Most results to return (default 10)"),
});
const SearchOutput = z.object({
  results: z.array(z.object({ uri: z.string(), title: z.string(), snippet: z.string(), score: z.number() })),
});
const ToolDocInput = z.strictObject({ name: z.string().min(1).max(128).describe("A tool name, e.g. add_contact") });
const ToolDocOutput = z.object({
  name: z.string(),
  uri: z.string(),
  title: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  public: z.boolean(),
  required_scope: z.string().nullable(),
  idempotent: z.boolean(),
  input_schema: z.record(z.string(), z.unknown()),
  output_schema: z.record(z.string(), z.unknown()),
  example: z.object({ arguments: z.record(z.string(), z.unknown()), answer: z.record(z.string(), z.unknown()) }),
  errors: z.array(z.object({ code: z.string(), status: z.number().int(), when: z.string() })),
  markdown: z.string(),
});

interface DocsTool {
  spec: McpTool;
  input: z.ZodType<any>;
  answer(args: any, baseUrl: string): Record<string, unknown>;
}

const readOnly = { readOnlyHint: true, openWorldHint: false } as const;
const schemaOf = (s: z.ZodType, io: "input" | "output") => toolJsonSchema(s, io) as McpTool["inputSchema"];

const DOCS_TOOLS: DocsTool[] = [
  {
    spec: {
      name: "search_docs",
      title: "Search the documentation",
      description:
        "Finds documentation pages (overview, tools, inbox item types, the ledger, errors, limits) matching the query's words, e.g. 'placeholder member' or 'settle up'; read a hit with resources/read on its uri.",
      inputSchema: schemaOf(SearchInput, "input"),
      outputSchema: schemaOf(SearchOutput, "output"),
      annotations: { title: "Search the documentation", ...readOnly },
    },
    input: SearchInput,
    answer: (args: z.output<typeof SearchInput>, baseUrl) => ({ results: searchDocs(baseUrl, args.query, args.limit ?? 10) }),
  },
  {
    spec: {
      name: "get_tool_doc",
      title: "Describe one tool",
      description:
        "One tool's documentation: purpose, tags, credential, input and output JSON Schemas, an example call and answer, and the errors it can return.",
      inputSchema: schemaOf(ToolDocInput, "input"),
      outputSchema: schemaOf(ToolDocOutput, "output"),
      annotations: { title: "Describe one tool", ...readOnly },
    },
    input: ToolDocInput,
    answer: (args: z.output<typeof ToolDocInput>, baseUrl) => {
      const doc = toolDoc(args.name, baseUrl);
      if (!doc)
        throw new AppError(
          "NOT_FOUND",
          `There is no tool named '${args.name}'.`,
          undefined,
          undefined,
          "Read svc://docs/tools or call search_docs to find the tool.",
        );
      return doc;
    },
  },
];

export function docsServer(baseUrl: string, requestId: string): Server {
  const server = statelessServer("svc-docs", "svc documentation", {
    capabilities: { resources: { listChanged: false }, tools: { listChanged: false } },
    instructions: DOCS_INSTRUCTIONS,
  });
  server.setRequestHandler("resources/list", () => ({
    resources: docPages(baseUrl).map((p) => ({ uri: p.uri, name: p.name, title: p.title, description: p.description, mimeType: "text/markdown" })),
  }));
  server.setRequestHandler("resources/templates/list", () => ({
    resourceTemplates: [
      { uriTemplate: TOOL_URI_TEMPLATE, name: "tool", title: "One tool's page", description: "The page of the tool {name}.", mimeType: "text/markdown" },
    ],
  }));
  server.setRequestHandler("resources/read", (req) => {
    const page = findPage(baseUrl, req.params.uri);
    // -32602 with data.uri in both eras: the 2026-07-28 code, which the SDK answers 2025-era requests with too
    if (!page) throw new ResourceNotFoundError(req.params.uri);
    return { contents: [{ uri: page.uri, mimeType: "text/markdown", text: page.markdown }] };
  });
  server.setRequestHandler("tools/list", () => ({ tools: DOCS_TOOLS.map((t) => t.spec) }));
  onToolCall(server, (name, args) => {
    const meta = { "svc/request_id": requestId };
    try {
      const tool = DOCS_TOOLS.find((t) => t.spec.name === name);
      if (!tool)
        throw new AppError(
          "NOT_FOUND",
          `There is no tool named '${name}'.`,
          undefined,
          undefined,
          "The documentation server has search_docs and get_tool_doc.",
        );
      const parsed = tool.input.safeParse(args);
      if (!parsed.success) {
        const issues = zodIssues(parsed.error);
        throw new AppError("VALIDATION_ERROR", `Invalid arguments: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, { issues });
      }
      return toolResult(tool.answer(parsed.data, baseUrl), false, meta);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      return toolResult(err.envelope(requestId), true, meta);
    }
  });
  return server;
}
