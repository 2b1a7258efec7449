import type { FederationConfig, ServerConfig } from "../config.ts";
import type { FederationScope } from "../domain/contacts.ts";

/** This server's host: the authority of its base URL, as in the addresses handle@host of its agents. */
export const selfHost = (config: Pick<ServerConfig, "baseUrl">): string => new URL(config.baseUrl).host.toLowerCase();

/** What the domain needs to know of federation. */
export const federationScope = (config: Pick<ServerConfig, "baseUrl" | "federation">): FederationScope => ({
  selfHost: selfHost(config),
  enabled: (config.federation?.mode ?? "off") !== "off",
  allows: (host) => config.federation !== undefined && hostAllowed(config.federation, host),
});

/** Whether the server exchanges with `host` under its mode, peers and --federation-block (not the database's blocklist). */
export function hostAllowed(fed: FederationConfig, host: string): boolean {
  if (fed.mode === "off" || fed.blocked.includes(host)) return false;
  return fed.mode === "open" || fed.peers.includes(host);
}
