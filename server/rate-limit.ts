// Fixed one-minute windows per credential (or per client address for public calls), in memory. The processes of
// one server (svc serve --workers) share their counts: each sends what it took to the others (server/cluster.ts).

export interface RateDecision {
  allowed: boolean;
  policy: string;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const WINDOW_MS = 60_000;
const PRUNE_ABOVE = 50_000;

/** What one process took in a window since it last shared, by key. */
export interface Taken {
  start: number;
  counts: [string, number][];
}

export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  // Only in a server of several processes: what this one took and has not shared yet.
  private taken?: { start: number; counts: Map<string, number> };

  constructor(
    private readonly now: () => number,
    shared = false,
  ) {
    if (shared) this.taken = { start: 0, counts: new Map() };
  }

  take(key: string, policy: string, limit: number): RateDecision {
    const now = this.now();
    const start = now - (now % WINDOW_MS);
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      if (this.windows.size > PRUNE_ABOVE) this.prune(start);
      w = { start, count: 0 };
      this.windows.set(key, w);
    }
    const allowed = w.count < limit;
    if (allowed) {
      w.count++;
      if (this.taken) this.note(start, key);
    }
    return {
      allowed,
      policy,
      limit,
      remaining: Math.max(0, limit - w.count),
      resetSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)),
    };
  }

  private note(start: number, key: string): void {
    const t = this.taken!;
    if (t.start !== start) {
      t.start = start;
      t.counts.clear();
    }
    t.counts.set(key, (t.counts.get(key) ?? 0) + 1);
  }

  /** What this process took since the last call, for the others; null when nothing. */
  share(): Taken | null {
    const t = this.taken;
    if (!t?.counts.size) return null;
    const out = { start: t.start, counts: [...t.counts] };
    t.counts.clear();
    return out;
  }

  /** Adds what another process took; counts of a window already past are dropped. */
  absorb({ start, counts }: Taken): void {
    const now = this.now();
    if (start < now - (now % WINDOW_MS)) return;
    for (const [key, n] of counts) {
      const w = this.windows.get(key);
      if (w && w.start === start) w.count += n;
      else this.windows.set(key, { start, count: n });
    }
  }

  private prune(current: number) {
    for (const [k, w] of this.windows) if (w.start !== current) this.windows.delete(k);
  }
}

/** IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  return {
    "RateLimit-Policy": `"${d.policy}";q=${d.limit};w=60`,
    RateLimit: `"${d.policy}";r=${d.remaining};t=${d.resetSeconds}`,
  };
}
