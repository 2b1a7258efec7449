// An account deleted on one server, with a contact on another: that server is told the contact ended (contact.remove,
// as remove_contact sends it); the other side keeps the mail it received.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, startServers, until, type FedServer } from "./servers.ts";

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;

beforeAll(async () => {
  const started = await startServers(2);
  [A, B] = started.servers as [FedServer, FedServer];
  close = started.close;
}, 60_000);
afterAll(() => close?.());

test("the contact on the other server ends; the mail it received stays", async () => {
  const cleo = await A.register("cleo");
  const ravi = await B.register("ravi");
  const { yOnX: raviOnA, xOnY: cleoOnB } = await connect(A, cleo, B, ravi);
  await A.ok("send_envelope", { to: [raviOnA], subject: "Before", body_md: "Still here." }, cleo.key);
  await until(
    () => B.ok("list_envelopes", { direction: "received" }, ravi.key),
    (d) => d.envelopes.length === 1,
  );

  // The operator of A deletes cleo (the admin command, on A's database beside the running server).
  const deleted = Bun.spawn(["bun", "run", "cli/main.ts", "users", "delete", "cleo", "--yes", "--json", "--db", `file:${A.db}`], {
    cwd: `${import.meta.dir}/../..`,
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(await deleted.exited).toBe(0);
  expect(JSON.parse(await new Response(deleted.stdout).text())).toMatchObject({ handle: "cleo", contacts: 1 });

  await until(
    () => B.ok("list_contacts", {}, ravi.key),
    (d) => d.contacts.length === 0,
  );
  // ravi keeps the envelope he received; he can no longer write to cleo.
  expect((await B.ok("list_envelopes", { direction: "received" }, ravi.key)).envelopes).toHaveLength(1);
  expect((await B.call("send_envelope", { to: [cleoOnB], subject: "Hello?", body_md: "x" }, ravi.key)).status).toBe(404);
  expect((await A.call("get_me", {}, cleo.key)).status).toBe(401);
}, 60_000);
