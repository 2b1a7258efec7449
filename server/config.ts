import type { Clock } from "./clock.ts";

export interface ServerConfig {
  host: string;
  port: number;
  dbUrl: string;
  authToken?: string;
  baseUrl: string;
  inviteOnly: boolean;
  /** Calls per minute per credential, and per client address for public tools. */
  rateLimit: number;
  publicRateLimit: number;
  clock: Clock;
}

export const DEFAULTS = {
  host: "127.0.0.1",
  port: 8787,
  dbUrl: "file:./data/svc.db",
  rateLimit: 600,
  publicRateLimit: 60,
};
