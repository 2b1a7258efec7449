import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** A random secret with a readable prefix, e.g. `svc_...`; 256 bits of entropy. */
export const newSecret = (prefix: string) => `${prefix}_${randomBytes(32).toString("base64url")}`;

/** Secrets are stored only as this digest. */
export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
