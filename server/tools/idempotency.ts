// The one place that makes write tools idempotent: a key per agent remembers the call and its answer.
import { and, eq, sql } from "drizzle-orm";
import { preparedInsert, prepared, type Tx } from "../../db/client.ts";
import { idempotencyRecords } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { AppError } from "../errors.ts";
import { sha256 } from "../auth/secrets.ts";
import type { Call } from "../services.ts";

/** Stable JSON: object keys sorted, so the same arguments always hash the same. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

export function requestHash(tool: string, args: Record<string, unknown>): string {
  const { idempotency_key: _ignored, ...rest } = args;
  return sha256(`${tool}\n${canonical(rest)}`);
}

const record = prepared((tx) =>
  tx
    .select()
    .from(idempotencyRecords)
    .where(and(eq(idempotencyRecords.agentId, sql.placeholder("agentId")), eq(idempotencyRecords.key, sql.placeholder("key"))))
    .prepare(),
);
const insertRecord = preparedInsert(idempotencyRecords, ["agentId", "key", "tool", "requestHash", "response", "createdAt"]);

/**
 * The idempotency key a call names before its arguments are parsed (the header, else the field), if it is a string:
 * what can be known of it before the call runs (a record read ahead, whether a call may be sent again).
 */
export function namedKey(call: Pick<Call, "raw" | "meta">): string | undefined {
  const key = call.meta.idempotencyKey ?? (call.raw as { idempotency_key?: unknown } | null)?.idempotency_key;
  return typeof key === "string" && key ? key : undefined;
}

/** What the agent's key remembers: undefined for a first call. Judge it with `answer`. */
export type KeyRecord = typeof idempotencyRecords.$inferSelect | undefined;

export function recordOf(tx: Tx, agentId: string, key: string): Promise<KeyRecord> {
  return record(tx).get({ agentId, key });
}

/** The stored answer for a retry, null for a first call; throws when the key was used for another call. */
export function answer(rec: KeyRecord, hash: string, replay: boolean): Record<string, unknown> | null {
  if (!rec) return null;
  if (rec.requestHash !== hash) {
    throw new AppError("IDEMPOTENCY_KEY_REUSED", "This idempotency_key was already used for a different call.");
  }
  if (!replay || rec.response === null) {
    throw new AppError(
      "IDEMPOTENCY_KEY_REUSED",
      `This call was already made with this idempotency_key, and ${rec.tool} is never replayed because its answer is shown only once.`,
      undefined,
      undefined,
      "If you lost the answer, call again with a new idempotency_key.",
    );
  }
  return JSON.parse(rec.response) as Record<string, unknown>;
}

export async function remember(
  tx: Tx,
  agentId: string,
  key: string,
  tool: string,
  hash: string,
  response: Record<string, unknown> | null,
  now: Date,
): Promise<void> {
  await insertRecord(tx).run({
    agentId,
    key,
    tool,
    requestHash: hash,
    response: response === null ? null : JSON.stringify(response),
    createdAt: iso(now),
  });
}
