// The subset of RFC 9421 (HTTP Message Signatures) and RFC 9530 (Digest Fields) that federation uses: one Ed25519
// signature over derived components and header fields, its parameters created, expires, keyid, alg and tag; a
// SHA-256 Content-Digest of the body. Structured fields are parsed only as far as these two headers need.
// Checked against RFC 9421 Appendix B.2.6 (test/federation/signatures.test.ts).

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

const b64 = (bytes: ArrayBuffer | Uint8Array) => Buffer.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)).toString("base64");

/** RFC 9530 Content-Digest with sha-256. */
export async function contentDigest(body: string | Uint8Array): Promise<string> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return `sha-256=:${b64(await crypto.subtle.digest("SHA-256", new Uint8Array(bytes)))}:`;
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
      if (name.startsWith("@")) return null;
      return m.headers.get(name)?.trim() ?? null;
  }
}

/** The serialised @signature-params: the inner list of components and the parameters, in the given order. */
export function serializeParams(components: readonly string[], params: SignatureParams): string {
  let s = `(${components.map((c) => `"${c}"`).join(" ")})`;
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    s += typeof v === "number" ? `;${k}=${v}` : `;${k}="${String(v).replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  }
  return s;
}

/** RFC 9421 section 2.5: one line per component, then the signature parameters. */
export function signatureBase(m: Message, components: readonly string[], paramsText: string): string {
  const lines = components.map((c) => {
    const v = componentValue(c, m);
    if (v === null) throw new SignatureError(`the message has no ${c}`);
    return `"${c}": ${v}`;
  });
  lines.push(`"@signature-params": ${paramsText}`);
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
  const paramsText = serializeParams(components, params);
  const base = signatureBase(m, components, paramsText);
  const sig = await crypto.subtle.sign({ name: "Ed25519" }, key, new TextEncoder().encode(base));
  return { signatureInput: `${label}=${paramsText}`, signature: `${label}=:${b64(sig)}:` };
}

export interface ParsedSignature {
  label: string;
  components: string[];
  params: Record<string, string | number>;
  /** The parameters exactly as sent: the signature base repeats them byte for byte. */
  paramsText: string;
  signature: Uint8Array;
}

/** Splits a dictionary's top-level members (commas outside strings and parentheses). */
function members(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(text.slice(start).trim());
  return out.filter(Boolean);
}

/** The signature labelled `label` in Signature-Input and Signature, or SignatureError. */
export function parseSignature(signatureInput: string | null, signature: string | null, label = FED_LABEL): ParsedSignature {
  if (!signatureInput || !signature) throw new SignatureError("Signature-Input and Signature are required");
  const input = members(signatureInput).find((m) => m.startsWith(`${label}=`));
  const sig = members(signature).find((m) => m.startsWith(`${label}=`));
  if (!input || !sig) throw new SignatureError(`no signature labelled ${label}`);
  const paramsText = input.slice(label.length + 1);
  const list = /^\(((?:\s*"[^"\\]*")*)\s*\)((?:;[a-z][a-z0-9_.*-]*=(?:\d+|"(?:[^"\\]|\\.)*"))*)$/.exec(paramsText);
  if (!list) throw new SignatureError("Signature-Input is malformed");
  const components = [...list[1]!.matchAll(/"([^"\\]*)"/g)].map((x) => x[1]!);
  const params: Record<string, string | number> = {};
  for (const p of list[2]!.matchAll(/;([a-z][a-z0-9_.*-]*)=(\d+|"((?:[^"\\]|\\.)*)")/g)) {
    if (Object.hasOwn(params, p[1]!)) throw new SignatureError("a signature parameter is repeated");
    params[p[1]!] = p[3] !== undefined ? p[3].replace(/\\(.)/g, "$1") : Number(p[2]);
  }
  const bytes = /^:([A-Za-z0-9+/]+={0,2}):$/.exec(sig.slice(label.length + 1));
  if (!bytes) throw new SignatureError("Signature is malformed");
  return { label, components, params, paramsText, signature: new Uint8Array(Buffer.from(bytes[1]!, "base64")) };
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
  const base = signatureBase(m, parsed.components, parsed.paramsText);
  return crypto.subtle.verify({ name: "Ed25519" }, key, new Uint8Array(parsed.signature), new TextEncoder().encode(base));
}
