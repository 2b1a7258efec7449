// GET /.well-known/svc-federation: which server this is, where to send transactions, its policy, the protocol
// versions it speaks and its keys (a JWKS; also at /.well-known/svc-federation/jwks.json). Nothing about agents:
// a server never lets others list its handles.
import type { Services } from "../services.ts";
import { KEY_CACHE_MS, publishedKeys } from "./keys.ts";
import { selfHost } from "./scope.ts";

export const FEDERATION_VERSIONS = ["1"];
/**
 * What this server takes beyond version 1 as first released: a sender adds such a field, or sends such an event type,
 * only to a peer that lists it, since a peer of an earlier release refuses an event it does not know.
 */
export const FEDERATION_FEATURES = ["envelope.recipients", "account.deleted"] as const;

const cached = (body: unknown) =>
  new Response(JSON.stringify(body), {
    headers: { "Content-Type": "application/json", "Cache-Control": `public, max-age=${KEY_CACHE_MS / 1000}`, "X-Content-Type-Options": "nosniff" },
  });

export async function discoveryDocument(svc: Services): Promise<Response> {
  const fed = svc.config.federation;
  if (!fed || fed.mode === "off")
    return new Response(JSON.stringify({ error: "federation is off" }), { status: 404, headers: { "Content-Type": "application/json" } });
  const keys = await svc.db.read((tx) => publishedKeys(tx, svc.config.clock.now()));
  const base = svc.config.baseUrl;
  return cached({
    server: selfHost(svc.config),
    endpoint: `${base}/fed/v1`,
    policy: { mode: fed.mode, contact_requests: "code by default; each agent chooses" },
    versions: FEDERATION_VERSIONS,
    features: FEDERATION_FEATURES,
    jwks_uri: `${base}/.well-known/svc-federation/jwks.json`,
    jwks: { keys },
  });
}

export async function jwksDocument(svc: Services): Promise<Response> {
  const fed = svc.config.federation;
  if (!fed || fed.mode === "off")
    return new Response(JSON.stringify({ error: "federation is off" }), { status: 404, headers: { "Content-Type": "application/json" } });
  return cached({ keys: await svc.db.read((tx) => publishedKeys(tx, svc.config.clock.now())) });
}
