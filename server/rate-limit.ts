// Fixed one-minute windows per credential (or per client address for public calls), in memory.

export interface RateDecision {
  allowed: boolean;
  policy: string;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const WINDOW_MS = 60_000;
const PRUNE_ABOVE = 50_000;

export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly now: () => number) {}

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
    if (allowed) w.count++;
    return {
      allowed,
      policy,
      limit,
      remaining: Math.max(0, limit - w.count),
      resetSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)),
    };
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
