// A cap on the connections one address holds in this process. Bun.serve tells an HTTP handler nothing of sockets
// opening or closing, only the peer's address and port of each request; so a socket is counted from its first
// request until it has been idle for the server's idle timeout (after which Bun has closed it). An address at the
// cap gets its answers on new sockets with Connection: close, so they end at once instead of staying open; an
// address with the cap's number of requests in flight is refused. Sockets that never send a request are not seen
// here: Bun closes them after about 10 s of its own.
import { AppError } from "./errors.ts";

export type Admission = "keep" | "close" | "refuse";

const PRUNE_ABOVE = 10_000;

export class ConnectionCap {
  // By address: each socket (its port) counted as open, and when it last ended a request.
  private readonly open = new Map<string, Map<number, number>>();
  private readonly flying = new Map<string, number>();

  constructor(
    /** Sockets, and requests in flight, per address; 0: no cap. */
    readonly cap: number,
    private readonly idleMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A request begins on the socket address:port; `done` must follow unless it is refused. */
  admit(address: string, port: number): Admission {
    if (!this.cap) return "keep";
    const flying = this.flying.get(address) ?? 0;
    if (flying >= this.cap) return "refuse";
    this.flying.set(address, flying + 1);
    const now = this.now();
    let ports = this.open.get(address);
    if (!ports) {
      if (this.open.size > PRUNE_ABOVE) this.prune(now);
      ports = new Map();
      this.open.set(address, ports);
    }
    if (ports.has(port)) {
      ports.set(port, now);
      return "keep";
    }
    if (ports.size >= this.cap) for (const [p, t] of ports) if (now - t > this.idleMs) ports.delete(p);
    if (ports.size >= this.cap) return "close";
    ports.set(port, now);
    return "keep";
  }

  /** The request admitted on address:port is answered; a socket told to close is not counted any more. */
  done(address: string, port: number, admission: Admission): void {
    if (!this.cap) return;
    const left = (this.flying.get(address) ?? 1) - 1;
    if (left > 0) this.flying.set(address, left);
    else this.flying.delete(address);
    const ports = this.open.get(address);
    if (admission === "keep") ports?.set(port, this.now());
  }

  /** Requests in flight from address. */
  inFlight(address: string): number {
    return this.flying.get(address) ?? 0;
  }

  private prune(now: number) {
    for (const [address, ports] of this.open) {
      for (const [p, t] of ports) if (now - t > this.idleMs) ports.delete(p);
      if (!ports.size && !this.flying.has(address)) this.open.delete(address);
    }
  }
}

/** The answer to an address with `cap` requests in flight already; the socket closes after it. */
export function tooManyConnections(cap: number): Response {
  const err = new AppError(
    "RATE_LIMITED",
    `Too many requests in flight from your address (at most ${cap} at once).`,
    undefined,
    1,
    "Wait for your other requests to be answered, then retry; reuse a few connections instead of opening many.",
  );
  return new Response(JSON.stringify(err.envelope(crypto.randomUUID())), {
    status: 429,
    headers: { "Content-Type": "application/json", "Retry-After": "1", Connection: "close", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" },
  });
}

/** The response, sent with Connection: close (Bun then closes the socket after it). */
export function closing(res: Response): Response {
  try {
    res.headers.set("Connection", "close");
    return res;
  } catch {
    // Headers of some responses are immutable.
    const headers = new Headers(res.headers);
    headers.set("Connection", "close");
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}
