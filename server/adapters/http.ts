// Shared HTTP plumbing: reading JSON bodies safely and writing envelopes with the common headers.
import { AppError } from "../errors.ts";

export const MAX_BODY_BYTES = 1024 * 1024;

export function baseHeaders(requestId: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    "Content-Type": "application/json; charset=utf-8",
    "X-Request-Id": requestId,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    ...extra,
  };
}

/** Answers written by json(): they carry the security headers already (app.ts need not look). */
const withBaseHeaders = new WeakSet<Response>();
export const hasBaseHeaders = (res: Response) => withBaseHeaders.has(res);

export function json(body: unknown, status: number, requestId: string, extra: Record<string, string> = {}): Response {
  const res = new Response(JSON.stringify(body), { status, headers: baseHeaders(requestId, extra) });
  withBaseHeaders.add(res);
  return res;
}

export function errorResponse(error: AppError, requestId: string, extra: Record<string, string> = {}): Response {
  const headers: Record<string, string> = { ...extra };
  if (error.code === "UNAUTHENTICATED") headers["WWW-Authenticate"] = extra["WWW-Authenticate"] ?? "Bearer";
  if (error.retryAfter !== undefined) headers["Retry-After"] = String(error.retryAfter);
  return json(error.envelope(requestId), error.status, requestId, headers);
}

const bodyError = (message: string) => new AppError("VALIDATION_ERROR", `Invalid request body: ${message}`, { issues: [{ path: "body", message }] });

/**
 * The body's bytes, read only up to the limit: a chunked body (no Content-Length) stops being read past it,
 * instead of being buffered whole or failing the read itself (Bun's own limit), which would not be the envelope.
 */
async function readLimitedBytes(req: Request, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      size += r.value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => undefined);
        throw bodyError(`larger than ${limit} bytes`);
      }
      chunks.push(r.value);
    }
  } catch (err) {
    throw err instanceof AppError ? err : bodyError("could not be read");
  }
  return Buffer.concat(chunks);
}

/** The body as UTF-8 text, read within the limit, or null when it is not UTF-8 (MCP answers that itself). */
export async function readLimitedText(req: Request, limit = MAX_BODY_BYTES): Promise<string | null> {
  return strictUtf8(await readLimitedBytes(req, limit));
}

// One decoder for every body: decode() without { stream } keeps no state between calls.
const strictDecoder = new TextDecoder("utf-8", { fatal: true });

/** Refused, not repaired: a lossy decode would store U+FFFD where the caller sent something else. */
function strictUtf8(bytes: Uint8Array): string | null {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    return null;
  }
}

function utf8(bytes: Uint8Array): string {
  const text = strictUtf8(bytes);
  if (text === null) throw bodyError("not valid UTF-8");
  return text;
}

/**
 * The JSON object of a request; an absent body is `{}`. Anything else is a VALIDATION_ERROR, never a crash.
 * `limit`: a tool that takes a file allows more (its bodyLimit).
 */
export async function readJsonBody(req: Request, limit = MAX_BODY_BYTES): Promise<unknown> {
  const declared = req.headers.get("content-length");
  if (Number(declared ?? "0") > limit) {
    // refused unread: cancelling tells the server not to wait for the rest (it would hold the connection open)
    await req.body?.cancel().catch(() => undefined);
    throw bodyError(`larger than ${limit} bytes`);
  }
  // A body of known size within the limit is read at once; only a chunked one needs reading piece by piece.
  const text = utf8(declared !== null ? await req.bytes() : await readLimitedBytes(req, limit));
  if (text.trim() === "") return {};
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json" && !type.endsWith("+json")) throw bodyError("Content-Type must be application/json");
  try {
    return JSON.parse(text);
  } catch {
    throw bodyError("not valid JSON");
  }
}
