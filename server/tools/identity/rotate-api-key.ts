import { z } from "zod";
import { rotateApiKey as rotate } from "../../auth/credentials.ts";
import { defineTool } from "../define.ts";
import { EMPTY } from "../../contract/wire.ts";

export const rotateApiKey = defineTool({
  name: "rotate_api_key",
  title: "Rotate my API key",
  description: "A new API key for this client, shown once: store it; the old one works 10 more minutes. Never replayed; not for OAuth.",
  tags: ["write", "destructive"],
  refusedInGrace: true,
  replay: false,
  input: EMPTY,
  output: z.object({ api_key: z.string() }),
  audit: () => ({ event: "key_created", method: "rotate" }),
  example: {},
  async run(ctx) {
    return { api_key: await rotate(ctx, `${ctx.config.baseUrl}/account`), suggested_next: ["get_me"] };
  },
});
