// Connections to peers are kept open between requests (server/federation/peer.ts), through the same SSRF guard
// (server/auth/safe-fetch.ts): a kept connection is reused, a lookup that refuses an address still refuses it, and a
// kept connection the other side closed as a request went out is sent again on a new one for a PUT (a transaction,
// carrying its id), never for a POST (it may have been acted on; its caller retries with its idempotency key).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http from "node:http";
import net from "node:net";
import { FetchRefused, fetchDocument, type SocketLookup } from "../../server/auth/safe-fetch.ts";

const toLoopback: SocketLookup = (_host, options, callback) =>
  (options as { all?: boolean } | null)?.all ? callback(null, [{ address: "127.0.0.1", family: 4 }]) : callback(null, "127.0.0.1", 4);
const refusing: SocketLookup = (_host, _options, callback) => callback(new FetchRefused("Not a public address."));

/**
 * A peer on a raw socket: it answers each request with keep-alive and counts connections; `dropNext` makes it close
 * the connection the next request arrives on, unanswered, as a server does with a connection it just timed out.
 */
let peer: net.Server;
let port: number;
let connections = 0;
let answered = 0;
let dropNext = false;
beforeAll(async () => {
  peer = net.createServer((socket) => {
    connections++;
    let buffered = "";
    socket.on("data", (chunk) => {
      buffered += chunk.toString("latin1");
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = "";
      if (dropNext) {
        dropNext = false;
        socket.destroy();
        return;
      }
      answered++;
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: keep-alive\r\n\r\n{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  port = (peer.address() as net.AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => peer.close(() => resolve())));

const send = (agent: http.Agent, method: "PUT" | "POST", lookup = toLoopback) =>
  fetchDocument(`http://peer.test:${port}/fed/v1/txn/1`, { agent, lookup, method, headers: { "content-type": "application/json" }, body: "{}" });

describe("connections kept open to a peer", () => {
  test("a second request goes on the connection the first one opened", async () => {
    const agent = new http.Agent({ keepAlive: true });
    const before = connections;
    expect((await send(agent, "PUT")).body).toBe('{"ok":true}');
    expect((await send(agent, "PUT")).body).toBe('{"ok":true}');
    expect(connections - before).toBe(1);
    agent.destroy();
  });

  test("a lookup that refuses the address still refuses it, with the connections kept", async () => {
    const agent = new http.Agent({ keepAlive: true });
    await expect(send(agent, "PUT", refusing)).rejects.toThrow("Not a public address.");
    agent.destroy();
  });

  test("a PUT on a kept connection closed unanswered is sent again on a new one; a POST is not", async () => {
    const agent = new http.Agent({ keepAlive: true });
    await send(agent, "PUT");
    const [opened, done] = [connections, answered];
    dropNext = true;
    expect((await send(agent, "PUT")).status).toBe(200);
    expect({ connections: connections - opened, answered: answered - done }).toEqual({ connections: 1, answered: 1 });

    dropNext = true;
    await expect(send(agent, "POST")).rejects.toBeInstanceOf(FetchRefused);
    expect(answered - done).toBe(1);
    agent.destroy();
  });
});
