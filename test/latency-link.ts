// A TCP proxy on loopback that holds every chunk `oneWayMs` in each direction: a database `2 * oneWayMs` away, as a
// Turso database in a nearby region is (bench/scale.ts, and tests of what the round trip costs).
import type { Socket } from "bun";

export interface LatencyLink {
  /** host:port to connect to instead of the target. */
  address: string;
  stop(): void;
}

interface Side {
  peer: Socket<Side> | null;
  /** What arrived before the other side was connected. */
  early: Uint8Array[];
  /** What this socket has yet to take (a write takes only what the kernel's buffer holds). */
  unwritten: Uint8Array[];
}

/** Writes data to a socket in order, keeping what it did not take until it drains. */
function send(to: Socket<Side>, data: Uint8Array): void {
  if (to.data.unwritten.length) {
    to.data.unwritten.push(data);
    return;
  }
  const n = to.write(data);
  if (n < data.length) to.data.unwritten.push(data.subarray(Math.max(0, n)));
}

function drain(socket: Socket<Side>): void {
  while (socket.data.unwritten.length) {
    const data = socket.data.unwritten[0]!;
    const n = socket.write(data);
    if (n < data.length) {
      socket.data.unwritten[0] = data.subarray(Math.max(0, n));
      return;
    }
    socket.data.unwritten.shift();
  }
}

export async function latencyLink(target: { hostname: string; port: number }, oneWayMs: number): Promise<LatencyLink> {
  const later = (to: () => Socket<Side> | null, data: Uint8Array) => {
    const copy = new Uint8Array(data);
    // Timers of one delay fire in the order they were set: the bytes keep their order.
    setTimeout(() => {
      const socket = to();
      if (socket) send(socket, copy);
    }, oneWayMs);
  };
  const server = Bun.listen<Side>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { peer: null, early: [], unwritten: [] };
        void Bun.connect<Side>({
          ...target,
          socket: {
            open(upstream) {
              upstream.data = { peer: client, early: [], unwritten: [] };
              client.data.peer = upstream;
              for (const chunk of client.data.early.splice(0)) later(() => upstream, chunk);
            },
            data(upstream, data) {
              later(() => upstream.data.peer, data);
            },
            drain,
            close(upstream) {
              setTimeout(() => upstream.data.peer?.end(), oneWayMs);
            },
            error() {},
          },
        }).catch(() => client.end());
      },
      data(client, data) {
        if (client.data.peer) later(() => client.data.peer, data);
        else client.data.early.push(new Uint8Array(data));
      },
      drain,
      close(client) {
        setTimeout(() => client.data.peer?.end(), oneWayMs);
      },
      error() {},
    },
  });
  return { address: `127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}
