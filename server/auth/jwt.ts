// Access tokens: ES256 JWTs signed with a key kept in the database (tokens survive restarts), one key per issuer.
// The issuer is this server's base URL and is also the only audience a token is accepted for.
import { SignJWT, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify, type JWK } from "jose";
import { and, desc, eq, isNull, ne } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { oauthSigningKeys } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
const ALG = "ES256";
const TYP = "at+jwt";

type KeyRow = typeof oauthSigningKeys.$inferSelect;
// Keys never change under a kid, so imported keys can be kept for the life of the process.
const imported = new Map<string, CryptoKey>();

async function keyOf(kid: string, jwk: string): Promise<CryptoKey> {
  let key = imported.get(kid);
  if (!key) {
    key = (await importJWK(JSON.parse(jwk) as JWK, ALG)) as CryptoKey;
    imported.set(kid, key);
  }
  return key;
}

/**
 * The key that signs for this issuer, made at start (ensureSigningKey) or on first use. Keys made for another issuer
 * (an old base URL) retire when this one first signs, so tokens issued before a move keep working until then.
 */
async function activeKey(tx: Tx, issuer: string, now: Date): Promise<KeyRow> {
  const key = (await currentKey(tx, issuer)) ?? (await newKey(tx, issuer, now));
  await tx
    .update(oauthSigningKeys)
    .set({ retiredAt: iso(now) })
    .where(and(ne(oauthSigningKeys.issuer, issuer), isNull(oauthSigningKeys.retiredAt)));
  return key;
}

const currentKey = (tx: Tx, issuer: string) =>
  tx
    .select()
    .from(oauthSigningKeys)
    .where(and(eq(oauthSigningKeys.issuer, issuer), isNull(oauthSigningKeys.retiredAt)))
    .orderBy(desc(oauthSigningKeys.createdAt))
    .get();

async function newKey(tx: Tx, issuer: string, now: Date): Promise<KeyRow> {
  const pair = await generateKeyPair(ALG, { extractable: true });
  const kid = crypto.randomUUID();
  const fresh: KeyRow = {
    kid,
    issuer,
    privateJwk: JSON.stringify(await exportJWK(pair.privateKey)),
    publicJwk: JSON.stringify({ ...(await exportJWK(pair.publicKey)), kid, alg: ALG, use: "sig" }),
    createdAt: iso(now),
    retiredAt: null,
  };
  await tx.insert(oauthSigningKeys).values(fresh);
  return fresh;
}

export interface AccessClaims {
  agentId: string;
  /** The session: a clients row of kind oauth. */
  clientId: string;
  /** The registered OAuth application. */
  oauthClientId: string;
  scope: string;
}

export async function signAccessToken(tx: Tx, issuer: string, c: AccessClaims, now: Date): Promise<string> {
  const key = await activeKey(tx, issuer, now);
  const iat = Math.floor(now.getTime() / 1000);
  return new SignJWT({ scope: c.scope, client_id: c.oauthClientId, sid: c.clientId })
    .setProtectedHeader({ alg: ALG, typ: TYP, kid: key.kid })
    .setIssuer(issuer)
    .setAudience(issuer)
    .setSubject(c.agentId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ACCESS_TOKEN_TTL_SECONDS)
    .setJti(crypto.randomUUID())
    .sign(await keyOf(`${key.kid}:private`, key.privateJwk));
}

/** Makes the issuer's signing key if it has none (at start, so that the JWK Set is only ever read). */
export async function ensureSigningKey(tx: Tx, issuer: string, now: Date): Promise<void> {
  if (!(await currentKey(tx, issuer))) await newKey(tx, issuer, now);
}

/** The JWK Set clients and resource servers verify tokens with. Reads only. */
export async function publicKeys(tx: Tx, issuer: string): Promise<{ keys: JWK[] }> {
  const rows = await tx
    .select({ jwk: oauthSigningKeys.publicJwk })
    .from(oauthSigningKeys)
    .where(and(eq(oauthSigningKeys.issuer, issuer), isNull(oauthSigningKeys.retiredAt)));
  return { keys: rows.map((r) => JSON.parse(r.jwk) as JWK) };
}

export const looksLikeJwt = (token: string) => /^eyJ[\w-]*\.[\w-]+\.[\w-]+$/.test(token);

/**
 * The claims of a valid access token, or null: unknown or retired key, bad signature, wrong type, expired,
 * or issued for an audience other than the issuer its key signs for.
 */
export async function verifyAccessToken(tx: Tx, token: string, now: Date): Promise<AccessClaims | null> {
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    return null;
  }
  if (typeof kid !== "string") return null;
  const row = await tx
    .select()
    .from(oauthSigningKeys)
    .where(and(eq(oauthSigningKeys.kid, kid), isNull(oauthSigningKeys.retiredAt)))
    .get();
  if (!row) return null;
  try {
    const { payload } = await jwtVerify(token, await keyOf(row.kid, row.publicJwk), {
      issuer: row.issuer,
      audience: row.issuer,
      algorithms: [ALG],
      typ: TYP,
      currentDate: now,
      requiredClaims: ["sub", "exp", "iat"],
    });
    const { sub, sid, client_id, scope } = payload;
    if (typeof sub !== "string" || typeof sid !== "string" || typeof client_id !== "string" || typeof scope !== "string") return null;
    return { agentId: sub, clientId: sid, oauthClientId: client_id, scope };
  } catch {
    return null;
  }
}
