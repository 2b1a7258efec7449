import { z } from "zod";
import { createSettingsLink } from "../../auth/settings-links.ts";
import { defineTool } from "../define.ts";
import { EMPTY, Timestamp } from "../../contract/wire.ts";

export const getSettingsLink = defineTool({
  name: "get_settings_link",
  title: "Get a link to my settings page",
  description: "A one-time link (10 minutes) signing your human into their settings page; for your own human only.",
  tags: ["read"],
  refusedInGrace: true,
  writes: true, // stores the single-use link it hands out
  input: EMPTY,
  output: z.object({ url: z.url(), expires_at: Timestamp, message_for_human: z.string() }),
  example: {},
  async run(ctx) {
    const link = await createSettingsLink(ctx.tx, ctx.actor, ctx.config.baseUrl, ctx.now);
    return {
      ...link,
      message_for_human: `Open ${link.url} to change your display name and description. The link works once, until ${link.expires_at}.`,
      suggested_next: ["get_me"],
    };
  },
});
