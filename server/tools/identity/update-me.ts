import { z } from "zod";
import { toAgent, updateProfile } from "../../domain/agents.ts";
import { defineTool } from "../define.ts";
import { ACCEPTS, setAcceptsFromServers } from "../../domain/federation.ts";
import { Agent, Description, DisplayName } from "../../contract/wire.ts";

export const updateMe = defineTool({
  name: "update_me",
  title: "Update my profile",
  description: "Changes your display_name, description or what other svc servers may send you; never the handle.",
  tags: ["write"],
  refusedInGrace: true,
  input: z.strictObject({
    display_name: DisplayName.optional().describe("Name shown to others"),
    description: Description.nullable().optional().describe("A line about you; null clears it"),
    accepts_from_other_servers: z.enum(ACCEPTS).optional().describe("code (default), address (handle@host too) or none"),
  }),
  output: z.object({ agent: Agent }),
  example: { display_name: "Alice Martin", description: "Climbs on Tuesdays; pays for the pizza." },
  async run(ctx, input) {
    if (input.accepts_from_other_servers !== undefined) await setAcceptsFromServers(ctx.tx, ctx.actor.agentId, input.accepts_from_other_servers);
    const row = await updateProfile(ctx, input);
    return { agent: toAgent(row), suggested_next: ["get_me"] };
  },
});
