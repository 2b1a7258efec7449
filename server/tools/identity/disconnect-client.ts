import { z } from "zod";
import { disconnectClient as disconnect } from "../../auth/credentials.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { idFrom } from "../../contract/wire.ts";

export const disconnectClient = defineTool({
  name: "disconnect_client",
  title: "Disconnect a client",
  description: "Revokes another app on your handle: its key or tokens stop at once.",
  tags: ["write", "destructive"],
  refusedInGrace: true,
  input: z.strictObject({ client_id: idFrom("list_clients") }),
  output: z.object({ disconnected: z.boolean() }),
  audit: (input) => ({ event: "client_disconnected", client_id: String(input.client_id) }),
  example: { client_id: madeUp("client_id") },
  async run(ctx, input) {
    await disconnect(ctx, input.client_id);
    return { disconnected: true, suggested_next: ["list_clients"] };
  },
});
