// The one place that makes write tools idempotent: a key per agent remembers the call and its answer.
import { and, eq, sql } from "drizzle-orm";
import { prepared, type Tx, writeFilledLater } from "../../db/client.ts";
import { idempotencyRecords } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { AppError } from "../errors.ts";
import { sha256 } from "../auth/secrets.ts";

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
  // Kept by the call that made it once it has answered (remember): a moment after its writes, or never if it stopped.
  if (replay && rec.response === null) throw new AnswerPending(rec.tool);
  if (!replay) {
    throw new AppError(
      "IDEMPOTENCY_KEY_REUSED",
      `This call was already made with this idempotency_key, and ${rec.tool} is never replayed because its answer is shown only once.`,
      undefined,
      undefined,
      "If you lost the answer, call again with a new idempotency_key.",
    );
  }
  return JSON.parse(rec.response!) as Record<string, unknown>;
}

/** A call with this key was made, and its answer is not kept yet: it is being answered, or it stopped before. */
export class AnswerPending extends Error {
  constructor(readonly tool: string) {
    super("answer pending");
  }
}

/** What a call whose answer stays pending is told, past the wait for it. */
export const answerLost = (tool: string) =>
  new AppError(
    "IDEMPOTENCY_KEY_REUSED",
    `This call was already made with this idempotency_key, and ${tool}'s answer was not kept (the server stopped as it answered).`,
    undefined,
    undefined,
    "Read what it did with the read tools, or call again with a new idempotency_key.",
  );

/**
 * Remembers the key for this call, in its batch, before the tool runs: a second call with the key that commits first
 * makes this batch fail on the key, and it runs again to find the record. keep(answer) puts the answer to replay in
 * the record; false when the batch was already sent (a tool that read what it wrote), and keepApart must store it.
 */
export async function remember(
  tx: Tx,
  agentId: string,
  key: string,
  tool: string,
  hash: string,
  now: Date,
): Promise<(answer: Record<string, unknown>) => boolean> {
  const fill = await writeFilledLater(
    tx,
    (response) =>
      sql`INSERT INTO ${idempotencyRecords} (agent_id, key, tool, request_hash, response, created_at) VALUES (${agentId}, ${key}, ${tool}, ${hash}, ${response}, ${iso(now)})`,
  );
  return (answer) => fill(JSON.stringify(answer));
}

/** Stores the answer of a call whose batch went before it had answered (remember). */
export async function keepApart(tx: Tx, agentId: string, key: string, answer: Record<string, unknown>): Promise<void> {
  await tx
    .update(idempotencyRecords)
    .set({ response: JSON.stringify(answer) })
    .where(and(eq(idempotencyRecords.agentId, agentId), eq(idempotencyRecords.key, key)));
}
