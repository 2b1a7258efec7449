// A passkey in software, for tests that drive the pages with a fetch-based browser (PageClient): it answers the
// WebAuthn options a page's /passkeys/options hands out as a platform authenticator would (an ES256 key, attestation
// "none", user present and verified), in the JSON shape the page's script posts (server/web/passkey.js).
import { isoCBOR } from "@simplewebauthn/server/helpers";
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest();
const uint32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const UP = 0x01;
const UV = 0x04;
const AT = 0x40;

export class SoftPasskey {
  readonly id = randomBytes(16);
  private readonly keys = generateKeyPairSync("ec", { namedCurve: "P-256" });
  private counter = 0;

  /** origin: the server's base URL origin; its host is the relying party. */
  constructor(readonly origin: string) {}

  private clientData(type: "webauthn.create" | "webauthn.get", challenge: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: this.origin, crossOrigin: false }));
  }

  private authData(flags: number, rest: Uint8Array = new Uint8Array()): Buffer {
    this.counter++;
    return Buffer.concat([sha256(new URL(this.origin).hostname), Buffer.from([flags]), uint32(this.counter), rest]);
  }

  /** The answer to navigator.credentials.create with these options, as the credential field carries it. */
  register(options: { challenge: string }): string {
    const jwk = this.keys.publicKey.export({ format: "jwk" });
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, "base64url")],
        [-3, Buffer.from(jwk.y!, "base64url")],
      ]),
    );
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.id.length);
    const authData = this.authData(UP | UV | AT, Buffer.concat([Buffer.alloc(16), idLength, this.id, cose]));
    const attestation = isoCBOR.encode(
      new Map<string, string | Map<string, string> | Uint8Array>([
        ["fmt", "none"],
        ["attStmt", new Map<string, string>()],
        ["authData", authData],
      ]),
    );
    return JSON.stringify({
      id: b64u(this.id),
      rawId: b64u(this.id),
      type: "public-key",
      response: { clientDataJSON: b64u(this.clientData("webauthn.create", options.challenge)), attestationObject: b64u(attestation), transports: ["internal"] },
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
    });
  }

  /** The answer to navigator.credentials.get with these options. */
  authenticate(options: { challenge: string }): string {
    const clientData = this.clientData("webauthn.get", options.challenge);
    const authData = this.authData(UP | UV);
    const signature = sign("sha256", Buffer.concat([authData, sha256(clientData)]), this.keys.privateKey);
    return JSON.stringify({
      id: b64u(this.id),
      rawId: b64u(this.id),
      type: "public-key",
      response: { clientDataJSON: b64u(clientData), authenticatorData: b64u(authData), signature: b64u(signature) },
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
    });
  }
}
