// The explicit list of every tool; REST, MCP, OpenAPI, docs and the CLI all read it from here.
import { createHash } from "node:crypto";
import { exampleArguments, madeUpIn } from "./examples.ts";
import { addContact } from "./contacts/add-contact.ts";
import { blockContact } from "./contacts/block-contact.ts";
import { getContactCode } from "./contacts/get-contact-code.ts";
import { listContacts } from "./contacts/list-contacts.ts";
import { removeContact } from "./contacts/remove-contact.ts";
import { respondContactRequest } from "./contacts/respond-contact-request.ts";
import { rotateContactCode } from "./contacts/rotate-contact-code.ts";
import type { Tool } from "./define.ts";
import { disconnectClient } from "./identity/disconnect-client.ts";
import { getMe } from "./identity/get-me.ts";
import { listClients } from "./identity/list-clients.ts";
import { registerAgent } from "./identity/register-agent.ts";
import { rotateApiKey } from "./identity/rotate-api-key.ts";
import { updateMe } from "./identity/update-me.ts";
import { ackInbox } from "./inbox/ack-inbox.ts";
import { getInbox } from "./inbox/get-inbox.ts";
import { toolJsonSchema } from "./json-schema.ts";
import { EXPENSE_TOOLS } from "./expenses/index.ts";
import { GROUP_TOOLS } from "./groups/index.ts";
import { JOIN_TOOLS } from "./join/index.ts";
import { MAIL_TOOLS } from "./mail/index.ts";
import { PLAN_TOOLS } from "./plans/index.ts";

export const TOOLS: readonly Tool[] = [
  // identity and clients
  registerAgent,
  getMe,
  updateMe,
  rotateApiKey,
  listClients,
  disconnectClient,
  // contacts
  getContactCode,
  rotateContactCode,
  addContact,
  respondContactRequest,
  listContacts,
  removeContact,
  blockContact,
  // inbox
  getInbox,
  ackInbox,
  ...JOIN_TOOLS,
  ...GROUP_TOOLS,
  ...EXPENSE_TOOLS,
  ...MAIL_TOOLS,
  ...PLAN_TOOLS,
];

const byName = new Map(TOOLS.map((t) => [t.name, t]));
export const findTool = (name: string): Tool | undefined => byName.get(name);

export const inputJsonSchema = (t: Tool) => toolJsonSchema(t.input, "input");
export const outputJsonSchema = (t: Tool) => toolJsonSchema(t.output, "output");

/** What GET /v1/tools shows of a tool. */
export function describeTool(t: Tool) {
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    tags: t.tags,
    public: t.isPublic,
    required_scope: t.isPublic ? null : t.scope,
    idempotent: t.idempotent,
    input_schema: inputJsonSchema(t),
    output_schema: outputJsonSchema(t),
    example: { arguments: exampleArguments(t), made_up: madeUpIn(exampleArguments(t)) },
  };
}

let cached: { tools: ReturnType<typeof describeTool>[]; etag: string } | undefined;
/** The catalogue and its version (a hash of every schema): the ETag changes whenever a tool or field is added. */
export function catalogue() {
  if (!cached) {
    const tools = TOOLS.map(describeTool);
    const etag = `"${createHash("sha256").update(JSON.stringify(tools)).digest("hex").slice(0, 32)}"`;
    cached = { tools, etag };
  }
  return cached;
}
