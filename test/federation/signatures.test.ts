import { describe, expect, test } from "bun:test";
import {
  contentDigest,
  contentDigestProblem,
  parseSignature,
  serializeParams,
  signMessage,
  signatureBase,
  verifyMessage,
} from "../../server/federation/signatures.ts";

// RFC 9421 Appendix B.1.4 (test-key-ed25519) and B.2.6 (signing a request using ed25519).
const PRIVATE_PKCS8 = "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF";
const PUBLIC_SPKI = "MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=";
const request = {
  method: "POST",
  url: "https://example.com/foo?param=Value&Pet=dog",
  headers: new Headers({
    Date: "Tue, 20 Apr 2021 02:07:55 GMT",
    "Content-Type": "application/json",
    "Content-Digest": "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
    "Content-Length": "18",
  }),
};
const components = ["date", "@method", "@path", "@authority", "content-type", "content-length"];
const EXPECTED_BASE = `"date": Tue, 20 Apr 2021 02:07:55 GMT
"@method": POST
"@path": /foo
"@authority": example.com
"content-type": application/json
"content-length": 18
"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`;
const EXPECTED_SIGNATURE = "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:";

const key = (format: "pkcs8" | "spki", b64: string, usage: KeyUsage) =>
  crypto.subtle.importKey(format, Buffer.from(b64, "base64"), { name: "Ed25519" }, false, [usage]);

describe("RFC 9421 subset", () => {
  test("the signature base and the Ed25519 signature of Appendix B.2.6", async () => {
    const params = { created: 1618884473, keyid: "test-key-ed25519" };
    expect(signatureBase(request, components, params)).toBe(EXPECTED_BASE);
    const signed = await signMessage(request, await key("pkcs8", PRIVATE_PKCS8, "sign"), params, components, "sig-b26");
    expect(signed.signature).toBe(EXPECTED_SIGNATURE);
    expect(signed.signatureInput).toBe(`sig-b26=${serializeParams(components, params)}`);
  });

  test("the RFC's signature verifies with its public key, and fails once a covered field changes", async () => {
    const input = `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`;
    const parsed = parseSignature(input, EXPECTED_SIGNATURE, "sig-b26");
    expect(Object.fromEntries(parsed.params)).toEqual({ created: 1618884473, keyid: "test-key-ed25519" });
    const pub = await key("spki", PUBLIC_SPKI, "verify");
    expect(await verifyMessage(request, parsed, pub)).toBe(true);
    const changed = { ...request, headers: new Headers(request.headers) };
    changed.headers.set("Content-Length", "19");
    expect(await verifyMessage(changed, parsed, pub)).toBe(false);
  });

  test("Content-Digest is RFC 9530's sha-256 of the body", async () => {
    // RFC 9530 Appendix B.1: {"hello": "world"} followed by a newline.
    expect(await contentDigest('{"hello": "world"}\n')).toBe("sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:");
  });

  test("Signature-Input is a Dictionary: whitespace the grammar allows verifies against the canonical base; a label named twice keeps its last value", async () => {
    const pub = await key("spki", PUBLIC_SPKI, "verify");
    const input = `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`;
    const spaced = `other=("date") ,  sig-b26=(  "date"  "@method"   "@path" "@authority" "content-type" "content-length" );  created=1618884473;  keyid="test-key-ed25519"`;
    const parsed = parseSignature(spaced, EXPECTED_SIGNATURE, "sig-b26");
    expect(signatureBase(request, parsed.components, parsed.params)).toBe(EXPECTED_BASE);
    expect(await verifyMessage(request, parsed, pub)).toBe(true);
    const decoyInput = `sig-b26=("date");created=1;keyid="decoy"`;
    const decoySignature = `sig-b26=:${Buffer.alloc(64).toString("base64")}:`;
    const twice = parseSignature(`${decoyInput}, ${input}`, `${decoySignature}, ${EXPECTED_SIGNATURE}`, "sig-b26");
    expect(await verifyMessage(request, twice, pub)).toBe(true);
    const decoyLast = parseSignature(input, `${EXPECTED_SIGNATURE}, ${decoySignature}`, "sig-b26");
    expect(await verifyMessage(request, decoyLast, pub)).toBe(false);
    expect(() => parseSignature(input.replace(");", ") ;"), EXPECTED_SIGNATURE, "sig-b26")).toThrow();
  });

  test("Content-Digest is a Dictionary: every known algorithm present must match, unknown ones are ignored", async () => {
    // RFC 9421's example body, whose sha-512 its Content-Digest carries (the request above).
    const body = '{"hello": "world"}';
    const sha512 = request.headers.get("content-digest")!;
    const sha256 = await contentDigest(body);
    expect(await contentDigestProblem(sha512, body)).toBeNull();
    expect(await contentDigestProblem(`${sha256}, ${sha512}`, body)).toBeNull();
    expect(await contentDigestProblem(`unixsum=:AAAA:, ${sha256}`, body)).toBeNull();
    expect(await contentDigestProblem(`${sha256}, ${sha512.replace("WZDP", "XZDP")}`, body)).toContain("sha-512");
    expect(await contentDigestProblem(sha512, `${body}\n`)).toContain("does not match");
    expect(await contentDigestProblem("unixsum=:AAAA:", body)).not.toBeNull();
    expect(await contentDigestProblem("sha-256=1", body)).not.toBeNull();
    expect(await contentDigestProblem("sha-256=:not base64:", body)).not.toBeNull();
    expect(await contentDigestProblem(null, body)).not.toBeNull();
  });
});
