import { z } from "zod";
import { pollJoin } from "../../domain/join.ts";
import { defineTool } from "../define.ts";
import description from "./finish-join.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { Agent, GroupSummary } from "../../contract/wire.ts";

export const finishJoin = defineTool({
  name: "finish_join",
  title: "Finish joining a handle",
  description,
  tags: ["write"],
  public: true,
  idempotent: false,
  input: z.strictObject({ poll_token: z.string().min(20).max(200).describe("The poll_token join_network gave") }),
  output: z.object({
    status: z.enum(["pending", "connected", "denied", "expired"]),
    created: z.boolean().nullable(),
    agent: Agent.nullable(),
    api_key: z.string().nullable(),
    joined_group: GroupSummary.nullable(),
  }),
  // A connected poll hands out the new client's key once (api_key null afterwards): that is when a key is made.
  audit: (_input, out) =>
    out.api_key && out.agent
      ? { event: out.created ? "signup" : "key_created", method: "join", handle: out.agent.handle, agent_id: out.agent.agent_id }
      : undefined,
  example: { poll_token: madeUp("poll_token") },
  async run(ctx, input) {
    return pollJoin(ctx.tx, ctx.now, input.poll_token, ctx.config.quotas.keys);
  },
});
