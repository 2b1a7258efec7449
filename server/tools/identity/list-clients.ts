import { z } from "zod";
import { listClients as list } from "../../auth/credentials.ts";
import { defineTool } from "../define.ts";
import description from "./list-clients.description.md" with { type: "text" };
import { Cursor, Limit, Timestamp, Uuid } from "../../contract/wire.ts";

export const Client = z.object({
  client_id: Uuid,
  name: z.string(),
  kind: z.enum(["api_key", "oauth", "web"]).describe("api_key, oauth (an app signed in through OAuth) or web (a browser signed in to the pages)"),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
  current: z.boolean(),
  obtained_through: Uuid.nullable().describe(
    "The client this one came through (a browser signed in with its code, a key made in that browser): disconnecting it ends this one; null if connected directly",
  ),
  old_key_until: Timestamp.nullable().describe(
    "When rotate_api_key replaced this client's key: until when the old key still works (for work in flight only); null when no old key works",
  ),
});

export const listClients = defineTool({
  name: "list_clients",
  title: "List my clients",
  description,
  tags: ["read"],
  input: z.strictObject({ limit: Limit.optional(), cursor: Cursor.optional() }),
  output: z.object({ clients: z.array(Client), next_cursor: z.string().nullable() }),
  example: { limit: 10 },
  async run(ctx, input) {
    return { ...(await list(ctx, { limit: input.limit ?? 50, cursor: input.cursor })), suggested_next: ["disconnect_client"] };
  },
});
