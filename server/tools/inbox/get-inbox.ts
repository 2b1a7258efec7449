import { z } from "zod";
import { list } from "../../domain/inbox.ts";
import { INBOX_VIEW } from "../../views/index.ts";
import { defineTool } from "../define.ts";
import description from "./get-inbox.description.md" with { type: "text" };
import { InboxItem, Limit } from "../../contract/wire.ts";

export const getInbox = defineTool({
  name: "get_inbox",
  title: "Read my inbox",
  description,
  tags: ["read"],
  view: INBOX_VIEW,
  writes: "when-needed", // marks the items it shows as seen and moves the read cursor; a poll with nothing new only reads
  inboxSummary: false,
  input: z.strictObject({
    // Any run of digits (the spec's ^\d+$): one past the end reads nothing new. Bounded only against abuse.
    since: z.string().regex(/^\d+$/, "must be digits (a cursor)").max(1000).optional().describe("next_cursor or an item's seq"),
    include_seen: z.boolean().optional().describe("Also items already seen"),
    requires_action: z.boolean().optional().describe("true: all items awaiting a decision; marks nothing"),
    limit: Limit.optional(),
  }),
  output: z.object({
    items: z.array(InboxItem),
    digest_md: z.string(),
    unread: z.number().int(),
    requires_action: z.number().int(),
    next_cursor: z.string().nullable(),
  }),
  example: { include_seen: true, limit: 20 },
  async run(ctx, input) {
    const res = await list(ctx, input);
    // What waits for a decision first, then what acts on the other open items (a plan's answers: update_plan).
    const open = res.items.filter((i) => !i.resolved);
    const tools = [...open.filter((i) => i.requires_action), ...open.filter((i) => !i.requires_action)].flatMap((i) => i.suggested_tools);
    return { ...res, suggested_next: [...tools, ...(res.items.length ? ["ack_inbox"] : [])] };
  },
});
