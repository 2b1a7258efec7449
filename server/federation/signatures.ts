// The subset of RFC 9421 (HTTP Message Signatures) and RFC 9530 (Digest Fields) that federation uses: one Ed25519
// signature over derived components and header fields, its parameters created, expires, keyid, alg and tag; the
// body's Content-Digest, sha-256 sent, sha-256 and sha-512 checked. Signature-Input, Signature and Content-Digest are
// RFC 8941 Dictionaries, parsed and serialised by structured-headers: the signature base repeats the parsed
// signature parameters serialised again (RFC 9421 section 2.3), never the text as sent, so two implementations that
// parse the same field agree on what was signed. Checked against RFC 9421 Appendix B.2.6
// (test/federation/signatures.test.ts) and npm's http-message-signatures (test/federation/interop.test.ts).
import {
  type InnerList,
  isInnerList,
  type Item,
  type Parameters,
  parseDictionary,
  serializeDictionary,
  serializeInnerList,
  serializeItem,
} from "structured-headers";

/** The components every federation transaction covers, in this order. */
export const FED_COMPONENTS = ["@method", "@target-uri", "content-digest", "content-type"] as const;
export const FED_TAG = "svc-federation";
export const FED_LABEL = "fed";

export interface SignatureParams {
  created: number;
  expires?: number;
  keyid: string;
  alg?: string;
  tag?: string;
}

/** What a signature covers: a request's method, URL and header fields. */
export interface Message {
  method: string;
  url: string;
  headers: Headers;
}

/** The digest algorithms of RFC 9530 this server checks, by their Content-Digest key. */
const DIGEST_ALGORITHMS: Record<string, "SHA-256" | "SHA-512"> = { "sha-256": "SHA-256", "sha-512": "SHA-512" };
/** RFC 9530 section 4, on a refusal for the digest: sha-256 preferred (the one svc sends), sha-512 accepted. */
export const WANT_CONTENT_DIGEST = serializeDictionary({ "sha-256": 10, "sha-512": 3 });

const bytesOf = (body: string | Uint8Array) => (typeof body === "string" ? new TextEncoder().encode(body) : new Uint8Array(body));

/** RFC 9530 Content-Digest with sha-256. */
export async function contentDigest(body: string | Uint8Array): Promise<string> {
  return serializeDictionary({ "sha-256": await crypto.subtle.digest("SHA-256", bytesOf(body)) });
}

/**
 * Why a Content-Digest field does not vouch for `body`, or null when it does: it must be a Dictionary with at least
 * one algorithm this server knows, and every known one present must match; unknown ones are ignored (RFC 9530 lets a
 * sender send several, and a receiver check those it supports).
 */
export async function contentDigestProblem(field: string | null, body: string | Uint8Array): Promise<string | null> {
  if (field === null) return "Content-Digest is required";
  let digests: ReturnType<typeof parseDictionary>;
  try {
    digests = parseDictionary(field);
  } catch {
    return "Content-Digest is malformed";
  }
  const known = [...digests].filter(([alg]) => Object.hasOwn(DIGEST_ALGORITHMS, alg));
  if (known.length === 0) return "Content-Digest has neither sha-256 nor sha-512";
  for (const [alg, member] of known) {
    const value = isInnerList(member) ? null : member[0];
    if (!(value instanceof ArrayBuffer)) return `Content-Digest's ${alg} is not a byte sequence`;
    const actual = await crypto.subtle.digest(DIGEST_ALGORITHMS[alg]!, bytesOf(body));
    if (!Buffer.from(value).equals(Buffer.from(actual))) return `Content-Digest's ${alg} does not match the body`;
  }
  return null;
}

/** The value of one covered component, or null when the message lacks it. */
function componentValue(name: string, m: Message): string | null {
  const url = new URL(m.url);
  switch (name) {
    case "@method":
      return m.method.toUpperCase();
    case "@target-uri":
      return url.href;
    case "@authority":
      return url.host.toLowerCase();
    case "@path":
      return url.pathname;
    case "@query":
      return url.search || "?";
    default:
      // Not a field name (a space, a quote): Headers.get would throw, and no request carries it.
      if (name.startsWith("@") || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return null;
      return m.headers.get(name)?.trim() ?? null;
  }
}

/** Signature parameters as the ordered map structured fields serialise: their order is part of what is signed. */
const parameterMap = (params: SignatureParams | Parameters): Parameters =>
  params instanceof Map ? params : new Map(Object.entries(params).filter((e): e is [string, string | number] => e[1] !== undefined));

/** @signature-params as a structured value: the inner list of component names with the parameters. */
const innerList = (components: readonly string[], params: SignatureParams | Parameters): InnerList => [
  components.map((c): Item => [c, new Map()]),
  parameterMap(params),
];

/** The serialised @signature-params (RFC 9421 section 2.3). */
export function serializeParams(components: readonly string[], params: SignatureParams | Parameters): string {
  return serializeInnerList(innerList(components, params));
}

/** RFC 9421 section 2.5: one line per component, then the signature parameters in their canonical serialisation. */
export function signatureBase(m: Message, components: readonly string[], params: SignatureParams | Parameters): string {
  const lines = components.map((c) => {
    const v = componentValue(c, m);
    if (v === null) throw new SignatureError(`the message has no ${c}`);
    return `${serializeItem([c, new Map()])}: ${v}`;
  });
  lines.push(`"@signature-params": ${serializeParams(components, params)}`);
  return lines.join("\n");
}

export class SignatureError extends Error {}

/** Signs a message: the Signature-Input and Signature header values under `label`. */
export async function signMessage(
  m: Message,
  key: CryptoKey,
  params: SignatureParams,
  components: readonly string[] = FED_COMPONENTS,
  label = FED_LABEL,
): Promise<{ signatureInput: string; signature: string }> {
  const base = signatureBase(m, components, params);
  const sig = await crypto.subtle.sign({ name: "Ed25519" }, key, new TextEncoder().encode(base));
  return {
    signatureInput: serializeDictionary(new Map([[label, innerList(components, params)]])),
    signature: serializeDictionary({ [label]: sig }),
  };
}

export interface ParsedSignature {
  label: string;
  components: string[];
  /** The signature parameters as parsed, in order: the signature base serialises them again. */
  params: Parameters;
  signature: Uint8Array;
}

/**
 * The signature labelled `label` in Signature-Input and Signature, or SignatureError. Both are Dictionaries: a label
 * named twice keeps its last value (RFC 8941 section 4.2.2), as a parameter named twice does.
 */
export function parseSignature(signatureInput: string | null, signature: string | null, label = FED_LABEL): ParsedSignature {
  if (!signatureInput || !signature) throw new SignatureError("Signature-Input and Signature are required");
  let inputs: ReturnType<typeof parseDictionary>;
  let signatures: ReturnType<typeof parseDictionary>;
  try {
    inputs = parseDictionary(signatureInput);
    signatures = parseDictionary(signature);
  } catch {
    throw new SignatureError("Signature-Input or Signature is not a structured Dictionary");
  }
  const input = inputs.get(label);
  const sig = signatures.get(label);
  if (!input || !sig) throw new SignatureError(`no signature labelled ${label}`);
  if (!isInnerList(input)) throw new SignatureError("Signature-Input is malformed");
  const components: string[] = [];
  // Component parameters (sf, key, bs, req, name) select other values than the field's own; svc signs none of them.
  for (const [name, itemParams] of input[0]) {
    if (typeof name !== "string" || itemParams.size > 0) throw new SignatureError("a covered component must be a string without parameters");
    components.push(name);
  }
  const bytes = isInnerList(sig) ? null : sig[0];
  if (!(bytes instanceof ArrayBuffer)) throw new SignatureError("Signature is malformed");
  return { label, components, params: input[1], signature: new Uint8Array(bytes) };
}

/**
 * Why a signature over `components` cannot be checked against this message, or null: a component named twice, or one
 * the message lacks (a header field it does not carry, a derived component this code does not know, such as the
 * draft's @request-target). Such a signature is refused like a wrong one, never an error of the server.
 */
export function componentsProblem(m: Message, components: readonly string[]): string | null {
  if (new Set(components).size !== components.length) return "the signature names a component twice";
  const missing = components.find((c) => componentValue(c, m) === null);
  return missing === undefined ? null : `the signature covers ${JSON.stringify(missing)}, which the request lacks`;
}

/** Whether the parsed signature is a valid Ed25519 signature of the message by `key` (false when it cannot be). */
export async function verifyMessage(m: Message, parsed: ParsedSignature, key: CryptoKey): Promise<boolean> {
  if (componentsProblem(m, parsed.components)) return false;
  let base: string;
  try {
    base = signatureBase(m, parsed.components, parsed.params);
  } catch {
    // Should a parsed parameter not serialise again, the signature is refused, not answered with a server error.
    return false;
  }
  return crypto.subtle.verify({ name: "Ed25519" }, key, new Uint8Array(parsed.signature), new TextEncoder().encode(base));
}
