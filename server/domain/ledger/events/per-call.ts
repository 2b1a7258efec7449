// What a write call reads once however many of its steps ask (the group's home, its followers), kept by the batch
// the call is collecting: a call run again has a new batch, and reads again. A read call reads each time.
import { batchOf, type Tx } from "../../../../db/client.ts";

const calls = new WeakMap<object, Map<string, Promise<unknown>>>();

export function oncePerCall<T>(tx: Tx, key: string, read: () => Promise<T>): Promise<T> {
  const batch = batchOf(tx);
  if (!batch) return read();
  let memo = calls.get(batch);
  if (!memo) calls.set(batch, (memo = new Map()));
  let found = memo.get(key) as Promise<T> | undefined;
  if (!found) memo.set(key, (found = read()));
  return found;
}
