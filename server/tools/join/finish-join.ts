import { z } from "zod";
import { pollJoin } from "../../domain/join.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Agent, GroupSummary } from "../../contract/wire.ts";

export const finishJoin = defineTool({
  name: "finish_join",
  title: "Finish joining a handle",
  description:
    "Polls a join session started with join_network. status pending: wait interval_seconds and call again. connected: api_key is this app's own key, returned only on this first connected answer: store it at once and send it as 'Authorization: Bearer <api_key>'; later calls say connected with api_key null. created tells whether a new handle was made. denied or expired: call join_network again if still wanted. Not idempotent: the key is handed out once.",
  tags: ["write"],
  public: true,
  idempotent: false,
  input: z.strictObject({ poll_token: z.string().min(20).max(200) }),
  output: z.object({
    status: z.enum(["pending", "connected", "denied", "expired"]),
    created: z.boolean().nullable(),
    agent: Agent.nullable(),
    api_key: z.string().nullable(),
    joined_group: GroupSummary.nullable(),
  }),
  example: { poll_token: madeUp("poll_token") },
  async run(ctx, input) {
    return pollJoin(ctx.tx, ctx.now, input.poll_token, ctx.config.quotas.keys);
  },
});
