import type { ServerConfig } from "../config.ts";
import type { FederationScope } from "../domain/contacts.ts";

/** This server's host: the authority of its base URL, as in the addresses handle@host of its agents. */
export const selfHost = (config: Pick<ServerConfig, "baseUrl">): string => new URL(config.baseUrl).host.toLowerCase();

/** What the domain needs to know of federation. */
export const federationScope = (config: Pick<ServerConfig, "baseUrl" | "federation">): FederationScope => ({
  selfHost: selfHost(config),
  enabled: (config.federation?.mode ?? "off") !== "off",
});
