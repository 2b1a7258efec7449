// This server's Ed25519 signing keys for federation: made at start, rotated by `svc federation rotate-key`, published
// as a JWKS (discovery.ts). The newest key whose not_before has come signs; a replaced key stays published a day.
import { and, desc, gt, isNull, lte, or } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { federationKeys } from "../../db/schema/index.ts";
import { DAY, MINUTE, iso, later } from "../clock.ts";

/** How long peers may cache the discovery document and the keys (its Cache-Control). */
export const KEY_CACHE_MS = 5 * MINUTE;
/** A replaced key stays published this long, for transactions signed just before the rotation. */
export const OLD_KEY_MS = DAY;

export interface PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid: string;
  alg: "EdDSA";
  use: "sig";
  nbf: number;
  exp?: number;
}

async function newKey(tx: Tx, now: Date, notBefore: Date): Promise<string> {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const kid = `fed-${Bun.randomUUIDv7().slice(0, 23)}`;
  const priv = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const pub = await crypto.subtle.exportKey("jwk", pair.publicKey);
  await tx.insert(federationKeys).values({
    kid,
    privateJwk: JSON.stringify(priv),
    publicJwk: JSON.stringify({ kty: "OKP", crv: "Ed25519", x: pub.x }),
    createdAt: iso(now),
    notBefore: iso(notBefore),
    expiresAt: null,
  });
  return kid;
}

/** Makes the first key if there is none (at start, so that no request has to write it). */
export async function ensureFederationKey(tx: Tx, now: Date): Promise<void> {
  if (!(await tx.select({ kid: federationKeys.kid }).from(federationKeys).get())) await newKey(tx, now, now);
}

/**
 * A new key, published now and used once peers' caches have expired (or at once with `immediately`: peers fetch
 * the keys again on an unknown kid); the keys in use until then stay published for OLD_KEY_MS.
 */
export async function rotateFederationKey(tx: Tx, now: Date, immediately = false): Promise<{ kid: string; used_from: string }> {
  const notBefore = immediately ? now : new Date(now.getTime() + KEY_CACHE_MS);
  await tx
    .update(federationKeys)
    .set({ expiresAt: later(notBefore, OLD_KEY_MS) })
    .where(isNull(federationKeys.expiresAt));
  const kid = await newKey(tx, now, notBefore);
  return { kid, used_from: iso(notBefore) };
}

const live = (now: Date) => or(isNull(federationKeys.expiresAt), gt(federationKeys.expiresAt, iso(now)));

/** The keys to publish: every key not yet expired, the newest first. */
export async function publishedKeys(tx: Tx, now: Date): Promise<PublicJwk[]> {
  const rows = await tx.select().from(federationKeys).where(live(now)).orderBy(desc(federationKeys.createdAt));
  return rows.map((r) => ({
    ...(JSON.parse(r.publicJwk) as { kty: "OKP"; crv: "Ed25519"; x: string }),
    kid: r.kid,
    alg: "EdDSA",
    use: "sig",
    nbf: Math.floor(Date.parse(r.notBefore) / 1000),
    ...(r.expiresAt ? { exp: Math.floor(Date.parse(r.expiresAt) / 1000) } : {}),
  }));
}

/** The key that signs now: the newest whose not_before has come. */
export async function signingKey(tx: Tx, now: Date): Promise<{ kid: string; key: CryptoKey }> {
  const row = await tx
    .select()
    .from(federationKeys)
    .where(and(lte(federationKeys.notBefore, iso(now)), live(now)))
    .orderBy(desc(federationKeys.notBefore))
    .get();
  if (!row) throw new Error("federation: no signing key (the server makes one at start)");
  const key = await crypto.subtle.importKey("jwk", JSON.parse(row.privateJwk), { name: "Ed25519" }, false, ["sign"]);
  return { kid: row.kid, key };
}

/** A peer's published key as a verifying key, or null unless it is an Ed25519 key valid at `now`. */
export async function verifyingKey(jwk: Partial<PublicJwk>, now: Date): Promise<CryptoKey | null> {
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") return null;
  const seconds = now.getTime() / 1000;
  if (typeof jwk.nbf === "number" && jwk.nbf > seconds + 60) return null;
  if (typeof jwk.exp === "number" && jwk.exp < seconds) return null;
  try {
    return await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return null;
  }
}
