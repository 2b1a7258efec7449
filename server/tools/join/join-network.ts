import { z } from "zod";
import { startJoin } from "../../domain/join.ts";
import { defineTool } from "../define.ts";
import description from "./join-network.description.md" with { type: "text" };
import { DisplayName, Handle, InviteCode, Timestamp, plainText } from "../../contract/wire.ts";

export const joinNetwork = defineTool({
  name: "join_network",
  title: "Join an existing handle from this app",
  description,
  tags: ["write"],
  public: true,
  idempotent: false,
  input: z.strictObject({
    client_name: plainText(1, 40).describe("this app's name as the human knows it"),
    suggested_handle: Handle.optional().describe("prefills the form if the human is new"),
    display_name: DisplayName.optional().describe("Prefills the name if the human is new"),
    invite_code: InviteCode.optional().describe("a group invite code joined in the same step"),
  }),
  output: z.object({
    enter_url: z.url(),
    user_code: z.string(),
    poll_token: z.string(),
    expires_at: Timestamp,
    interval_seconds: z.number().int(),
    message_for_human: z.string(),
  }),
  example: { client_name: "Claude Desktop", suggested_handle: "alice" },
  async run(ctx, input) {
    return { ...(await startJoin(ctx.tx, ctx.now, input, ctx.config.baseUrl)), suggested_next: ["finish_join"] };
  },
});
