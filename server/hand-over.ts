// Among instances with one writer (svc serve --peer-secret), what writes outside a tool call (the web pages, the OAuth
// endpoints, federation's inbound requests) is handed to the writer whole: this instance's database refuses the
// write transaction before any statement runs, and the writer answers the HTTP request instead. Tool calls have a
// finer hand-over of their own (cluster.ts: the call, not the request), so they never come here.
import { AsyncLocalStorage } from "node:async_hooks";
import type { Db } from "../db/client.ts";
import { AppError } from "./errors.ts";

// The request being handled, and whether a write transaction was refused for it.
const handling = new AsyncLocalStorage<{ refused: boolean }>();

const notHere = () =>
  new AppError("STORAGE_UNAVAILABLE", "This instance does not write now, and the one that writes could not take the request. Retrying is safe.", undefined, 1);

/**
 * db, whose write transactions run only while writesHere() says so; refused, before any statement. Plain SQL
 * (exclusive, raw) is left as it is: no request writes through it, and /readyz reads the migrations with it.
 */
export function writerOnly(db: Db, writesHere: () => boolean): Db {
  return {
    ...db,
    tx: (fn) => {
      if (writesHere()) return db.tx(fn);
      const r = handling.getStore();
      if (r) r.refused = true;
      return Promise.reject(notHere());
    },
  };
}

/** Paths whose writes go through tool calls (handed over call by call), or that are the instances' own. */
const OWN_HAND_OVER = /^\/(v1(\/|$)|mcp(\/|$)|internal\/peer\/|healthz$|readyz$|metrics$)/;

/** Whether a request to this path is handed to the writer whole when it must write here. */
export const handedOverWhole = (path: string) => !OWN_HAND_OVER.test(path);

/**
 * handle(req), unless it tried to write here: then hand(copy of req) answers instead (nothing was written here; the
 * body is kept for that, read before the handler reads it).
 */
export async function orHandOver(req: Request, handle: (req: Request) => Promise<Response>, hand: (req: Request) => Promise<Response>): Promise<Response> {
  const copy = req.body ? req.clone() : req;
  const state = { refused: false };
  const res = await handling.run(state, () => handle(req));
  if (!state.refused) return res;
  await res.body?.cancel().catch(() => undefined);
  return hand(copy);
}
