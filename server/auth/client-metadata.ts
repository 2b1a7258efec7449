// Client ID metadata documents (MCP authorization 2025-11-25, draft-ietf-oauth-client-id-metadata-document):
// an MCP client may use an https URL as its client_id; the JSON document at that URL is its registration.
// The document is fetched through the SSRF guard (safe-fetch.ts), checked like a dynamic registration, and kept
// in oauth_clients until its cache lifetime ends, so the authorization and token endpoints then treat the client
// like any registered public client.
import type { Tx } from "../../db/client.ts";
import { oauthClients } from "../../db/schema/index.ts";
import { iso, later } from "../clock.ts";
import { clientFields, oauthClientById, type ClientFields } from "./oauth.ts";
import { OAuthError } from "../errors.ts";
import type { Services } from "../services.ts";
import type { FetchedDocument } from "../config.ts";
import { FetchRefused, MAX_DOCUMENT_BYTES, guardedFetch } from "./safe-fetch.ts";

/** Fetches the document at a client_id URL; the server's default is guardedFetch. */

/** How long a fetched document is trusted, in seconds: its Cache-Control max-age, kept within these bounds. */
export const METADATA_CACHE_SECONDS = { fallback: 300, min: 60, max: 3600 } as const;

/** Why a client_id URL cannot be used; the message is shown to the human. */
export class ClientMetadataError extends Error {}

/** Whether a client_id names a metadata document rather than a registration made here (those start with mcp_). */
export const isClientIdUrl = (clientId: string) => /^https:\/\//i.test(clientId);

/**
 * Why a URL cannot be a client_id, or null: https, a path other than "/", no fragment, no user name or password,
 * a plain host (it is shown to humans), and already in its normal form (so no dot segments or odd encodings).
 */
export function clientIdUrlProblem(clientId: string): string | null {
  if (clientId.length > 1000) return "is longer than 1000 characters";
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return "is not a URL";
  }
  if (url.protocol !== "https:") return "must use https";
  if (url.username || url.password) return "must not carry a user name or password";
  if (url.hash || clientId.includes("#")) return "must not have a fragment";
  if (url.pathname === "/") return "must have a path";
  if (!/^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/i.test(url.hostname)) return "must name a plain host";
  if (url.href !== clientId) return "must be written in its normal form (no dot segments, lowercase host, no default port)";
  return null;
}

/** Seconds to keep a document, from its Cache-Control header; no-store and no-cache keep it the shortest time allowed. */
export function cacheSeconds(cacheControl: string | null): number {
  const directives = (cacheControl ?? "")
    .toLowerCase()
    .split(",")
    .map((d) => d.trim());
  if (directives.includes("no-store") || directives.includes("no-cache")) return METADATA_CACHE_SECONDS.min;
  const maxAge = directives.map((d) => d.match(/^max-age=(\d+)$/)?.[1]).find((v) => v !== undefined);
  const seconds = maxAge === undefined ? METADATA_CACHE_SECONDS.fallback : Number(maxAge);
  return Math.min(METADATA_CACHE_SECONDS.max, Math.max(METADATA_CACHE_SECONDS.min, seconds));
}

const isJsonType = (contentType: string | null) => {
  const base = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return base === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(base);
};

/** The client a fetched document describes; throws ClientMetadataError naming what is wrong with it. */
export function parseClientMetadata(clientId: string, fetched: FetchedDocument): ClientFields {
  const wrong = (why: string) => new ClientMetadataError(`The app's metadata document ${why}.`);
  if (fetched.status >= 300 && fetched.status < 400) throw wrong(`answered with a redirect (${fetched.status}), which is not followed`);
  if (fetched.status !== 200) throw wrong(`could not be fetched (status ${fetched.status})`);
  if (!isJsonType(fetched.contentType)) throw wrong("is not served as application/json");
  if (Buffer.byteLength(fetched.body) > MAX_DOCUMENT_BYTES) throw wrong(`is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = JSON.parse(fetched.body);
  } catch {
    throw wrong("is not valid JSON");
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw wrong("is not a JSON object");
  const m = doc as Record<string, unknown>;
  if (m.client_id !== clientId) throw wrong("names a different client_id than its own URL");
  // Anyone can read the document, so it can hold no shared secret; svc serves public clients with PKCE only.
  if ("client_secret" in m || "client_secret_expires_at" in m) throw wrong("contains a client secret");
  try {
    return clientFields(m);
  } catch (err) {
    if (err instanceof OAuthError) throw wrong(`is not acceptable: ${err.message}`);
    throw err;
  }
}

async function storeClient(tx: Tx, clientId: string, fields: ClientFields, expiresAt: string, now: Date): Promise<void> {
  const values = { ...fields, metadataExpiresAt: expiresAt };
  await tx
    .insert(oauthClients)
    .values({ clientId, ...values, createdAt: iso(now) })
    .onConflictDoUpdate({ target: oauthClients.clientId, set: values });
}

/**
 * Makes sure the client a URL client_id names is known and fresh: its stored copy is used until it expires, then the
 * document is fetched again (outside any transaction) and checked. Throws ClientMetadataError; a stale copy is never
 * used when the fetch fails, as the draft asks the authorization request to be aborted then.
 */
export async function refreshMetadataClient(svc: Services, clientId: string): Promise<void> {
  const problem = clientIdUrlProblem(clientId);
  if (problem) throw new ClientMetadataError(`The app's client_id ${problem}.`);
  const now = svc.config.clock.now();
  const stored = await svc.db.tx((tx) => oauthClientById(tx, clientId));
  if (stored?.metadataExpiresAt && stored.metadataExpiresAt > iso(now)) return;
  let fetched: FetchedDocument;
  try {
    fetched = await (svc.config.fetchClientMetadata ?? guardedFetch)(clientId);
  } catch (err) {
    if (!(err instanceof FetchRefused)) throw err;
    throw new ClientMetadataError(`The app's metadata document could not be fetched. ${err.message}`);
  }
  const fields = parseClientMetadata(clientId, fetched);
  const expiresAt = later(now, cacheSeconds(fetched.cacheControl) * 1000);
  await svc.db.tx((tx) => storeClient(tx, clientId, fields, expiresAt, now));
}
