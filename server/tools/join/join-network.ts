import { z } from "zod";
import { startJoin } from "../../domain/join.ts";
import { defineTool } from "../define.ts";
import { DisplayName, Handle, InviteCode, Timestamp, plainText } from "../../contract/wire.ts";

export const joinNetwork = defineTool({
  name: "join_network",
  title: "Join an existing handle from this app",
  description:
    "For a human who already has a handle (from another agent) or wants one: starts a join session. Give message_for_human to your human; they open enter_url, check user_code, and confirm their handle with a one-time code left in their other agent's inbox (or their sign-in provider), or create a new handle. Meanwhile call finish_join with poll_token every interval_seconds until it is no longer pending; it returns this app's own API key once. With invite_code, the group of that invite is joined in the same step. Not idempotent: each call starts a new session.",
  tags: ["write"],
  public: true,
  idempotent: false,
  input: z.strictObject({
    client_name: plainText(1, 40).describe("this app's name as the human knows it"),
    suggested_handle: Handle.optional().describe("prefills the form if the human is new"),
    display_name: DisplayName.optional(),
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
