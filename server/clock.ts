/** Time is injected so tests can move it (key grace, decline window, expiry) without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
export const iso = (d: Date) => d.toISOString();
export const later = (d: Date, ms: number) => new Date(d.getTime() + ms).toISOString();
