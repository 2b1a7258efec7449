// A worker's run (server/cluster.ts) in one process, its transport a direct call: which transactions a call takes,
// in the worker and on the primary. An inbox poll that finds items is read once where it arrived and written once
// where writes run, not read again there.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Db } from "../../db/client.ts";
import { workerRun } from "../../server/cluster.ts";
import type { Services } from "../../server/services.ts";
import { invoke, run } from "../../server/tools/invoke.ts";
import { startTestServer, type TestServer } from "../harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

/** db, its transactions noted in `seen` as "<where> read" or "<where> write". */
function counted(db: Db, where: string, seen: string[]): Db {
  return Object.assign(Object.create(db), {
    read: (fn: Parameters<Db["read"]>[0]) => (seen.push(`${where} read`), db.read(fn)),
    tx: (fn: Parameters<Db["tx"]>[0]) => (seen.push(`${where} write`), db.tx(fn)),
  });
}

test("in a worker: a read runs there, a write and a poll that must write cross once, each in one transaction", async () => {
  const seen: string[] = [];
  const svc = s.server.services;
  const primary: Services = { ...svc, db: counted(svc.db, "primary", seen) };
  const worker: Services = {
    ...svc,
    db: counted(svc.db, "worker", seen),
    cluster: { run: workerRun({ send: (call) => (seen.push("sent"), run(primary, call, undefined, "write")) }) },
  };
  const [reader, sender] = [await s.register("seam-reader"), await s.register("seam-sender")];
  let last: Awaited<ReturnType<typeof invoke>> | undefined;
  const call = async (tool: string, args: object, key: string) => {
    seen.length = 0;
    const r = await invoke(worker, tool, args, { requestId: crypto.randomUUID(), token: key, clientAddress: () => "127.0.0.1" });
    expect(r.ok ? "OK" : r.error.code).toBe("OK");
    last = r;
    return [...seen];
  };
  // A read notes its client's last use, written later in a batch (server/auth/last-use.ts): no write of its own.
  expect(await call("get_me", {}, reader.key)).toEqual(["worker read"]);
  expect(await call("get_me", {}, reader.key)).toEqual(["worker read"]);
  // The write's inbox summary is read after its commit where the call arrived, not by the process every write waits
  // for; on a remote primary (SVC_TEST_DB_URL, SVC_TEST_SYNC_URL) it is read with the COMMIT instead (summaryOnCommit).
  const summaryRead = svc.db.mode === "local" ? ["worker read"] : [];
  expect(await call("add_contact", { handle: reader.handle, idempotency_key: "seam-contact-1" }, sender.key)).toEqual([
    "sent",
    "primary write",
    ...summaryRead,
  ]);
  expect(last?.ok && { inbox: typeof last.data.inbox, summaryFor: last.summaryFor }).toEqual({ inbox: "object", summaryFor: undefined });
  expect(await call("get_inbox", {}, reader.key)).toEqual(["worker read", "sent", "primary write"]);
  expect(await call("get_inbox", {}, reader.key)).toEqual(["worker read"]);
});
