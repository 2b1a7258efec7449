import { z } from "zod";
import { rotateApiKey as rotate } from "../../auth/credentials.ts";
import { defineTool } from "../define.ts";
import { EMPTY } from "../../contract/wire.ts";

export const rotateApiKey = defineTool({
  name: "rotate_api_key",
  title: "Rotate my API key",
  description:
    "Issues a new API key for this client only (shown once: store it at once). The old key keeps working for 10 minutes, then stops. Needs an idempotency_key, but is never replayed: a retry with the same key is refused rather than showing a key twice. Not available to OAuth sessions.",
  tags: ["write", "destructive"],
  refusedInGrace: true,
  replay: false,
  input: EMPTY,
  output: z.object({ api_key: z.string() }),
  example: {},
  async run(ctx) {
    return { api_key: await rotate(ctx, `${ctx.config.baseUrl}/account`), suggested_next: ["get_me"] };
  },
});
