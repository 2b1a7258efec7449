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
}

export async function latencyLink(target: { hostname: string; port: number }, oneWayMs: number): Promise<LatencyLink> {
  const later = (to: () => Socket<Side> | null, data: Uint8Array) => {
    const copy = new Uint8Array(data);
    // Timers of one delay fire in the order they were set: the bytes keep their order.
    setTimeout(() => to()?.write(copy), oneWayMs);
  };
  const server = Bun.listen<Side>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { peer: null, early: [] };
        void Bun.connect<Side>({
          ...target,
          socket: {
            open(upstream) {
              upstream.data = { peer: client, early: [] };
              client.data.peer = upstream;
              for (const chunk of client.data.early.splice(0)) later(() => upstream, chunk);
            },
            data(upstream, data) {
              later(() => upstream.data.peer, data);
            },
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
      close(client) {
        setTimeout(() => client.data.peer?.end(), oneWayMs);
      },
      error() {},
    },
  });
  return { address: `127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}
