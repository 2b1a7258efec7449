// A new app on the handle: whichever way it connected (join_network, OAuth, a key made on the account page), the
// agent's inbox is told who, which client and when, and how to disconnect it in one call. Not for the first client
// of a new handle (nothing else is there to tell) nor for browsers signing in (the human themselves, each time).
import type { Tx } from "../../db/client.ts";
import { iso } from "../clock.ts";
import { deliver } from "./inbox.ts";
import { quoted, untrusted } from "./untrusted.ts";

export interface ConnectedClient {
  agentId: string;
  clientId: string;
  /** The app's name as whoever connected it chose it. */
  name: string;
  kind: "api_key" | "oauth";
  /** How it came: join_network (an API key of its own), OAuth (signed in and allowed), or a key made on the account page. */
  via: "join_network" | "oauth" | "account_page";
}

const HOW: Record<ConnectedClient["via"], string> = {
  join_network: "through join_network, with an API key of its own",
  oauth: "through OAuth, signed in and allowed on svc's page",
  account_page: "with an API key made on the account page",
};

export async function noticeClientConnected(tx: Tx, now: Date, c: ConnectedClient): Promise<void> {
  await deliver(tx, now, {
    to: c.agentId,
    type: "auth.client_connected",
    from: null,
    summaryMd: `A new app, ${quoted(c.name, 40)}, connected to your handle. If your human did not connect it, disconnect it: disconnect_client client_id ${c.clientId}. It came ${HOW[c.via]} at ${iso(now)}.`,
    payload: {
      client_id: c.clientId,
      client_name: untrusted(c.name, "app name, chosen by whoever connected it"),
      kind: c.kind,
      via: c.via,
      connected_at: iso(now),
    },
    refs: { client_id: c.clientId },
  });
}
