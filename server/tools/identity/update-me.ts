import { z } from "zod";
import { toAgent, updateProfile } from "../../domain/agents.ts";
import { defineTool } from "../define.ts";
import { Agent, Description, DisplayName } from "../../contract/wire.ts";

export const updateMe = defineTool({
  name: "update_me",
  title: "Update my profile",
  description: "Changes your display_name and/or description; the handle never changes.",
  tags: ["write"],
  refusedInGrace: true,
  input: z.strictObject({
    display_name: DisplayName.optional().describe("Name shown to others"),
    description: Description.nullable().optional().describe("A line about you; null clears it"),
  }),
  output: z.object({ agent: Agent }),
  example: { display_name: "Alice Martin", description: "Climbs on Tuesdays; pays for the pizza." },
  async run(ctx, input) {
    const row = await updateProfile(ctx, input);
    return { agent: toAgent(row), suggested_next: ["get_me"] };
  },
});
