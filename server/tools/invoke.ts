// THE pipeline every transport calls, read top to bottom: rate limit -> check the values -> [where it runs] ->
// one transaction: authenticate -> the agent's limit -> scope -> validate -> idempotency -> run -> check the answer
// -> remember -> inbox summary (a write's after its commit); then the envelope data. Transports only translate. A
// write tool may send its first statements before the authentication has answered (runAhead), never seeing their
// answers before it has.
// A tool that writes runs in a write transaction; any other in a read one (local on an embedded replica), and in a
// write one after all if it finds it must write (NeedsWrite).
import type { ZodError } from "zod";
import { Gate, isReadOnly, NeedsWrite, sendAhead, type Tx } from "../../db/client.ts";
import { authenticate, type Authenticated } from "../auth/authenticate.ts";
import { checkAttempts, recordAttempt } from "../domain/attempts.ts";
import { summary, summaryOnCommit } from "../domain/inbox.ts";
import { sha256 } from "../auth/secrets.ts";
import { AppError, describeCause, issuePath, storageFault, toAppError, type Issue } from "../errors.ts";
import { rateLimitHeaders, type RateDecision } from "../rate-limit.ts";
import type { Call, CallEvent, CallMeta, CallResult, Services } from "../services.ts";
import { findTool, inputJsonSchema, nearestTool } from "./catalogue.ts";
import { fieldsAt, unknownField } from "./unknown-fields.ts";
import type { Tool, ToolContext } from "./define.ts";
import type { Actor, Principal } from "../contract/principal.ts";
import type { InboxSummary } from "../contract/wire.ts";
import { answer, type KeyRecord, namedKey, recordOf, remember, requestHash } from "./idempotency.ts";
import { unkeptValue } from "./json-values.ts";

/** The issues of a failed parse; an unknown field is named with the field meant, when `schema` tells what is known there. */
export function zodIssues(err: ZodError, schema?: Record<string, unknown>): Issue[] {
  return err.issues.flatMap((i) => {
    const at = (path: PropertyKey[]) => (path.length ? issuePath(path) : "(arguments)");
    if (i.code !== "unrecognized_keys" || !schema) return [{ path: at(i.path), message: i.message }];
    const known = fieldsAt(schema, i.path);
    return i.keys.map((key) => ({ path: at(i.path), message: unknownField(key, known) }));
  });
}

/** zod's message for a field left out ("Invalid input: expected string, received undefined"), said as it is meant. */
const missingField = (iss: { code: string; input?: unknown; expected?: unknown }) =>
  iss.code === "invalid_type" && iss.input === undefined ? `required${typeof iss.expected === "string" ? ` (${iss.expected})` : ""}` : undefined;

function validationError(issues: Issue[]): AppError {
  const named = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  return new AppError("VALIDATION_ERROR", `Invalid arguments: ${named}`, { issues });
}

/** Parses arguments against the tool's live schema, folding in the Idempotency-Key header. */
export function parseArguments(tool: Tool, raw: unknown, headerKey?: string | null): Record<string, unknown> {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw validationError([{ path: "(arguments)", message: "arguments must be a JSON object" }]);
  }
  const args = raw as Record<string, unknown>;
  if (tool.idempotent && headerKey) {
    if (args.idempotency_key !== undefined && args.idempotency_key !== headerKey) {
      throw validationError([{ path: "idempotency_key", message: "differs from the Idempotency-Key header; send one" }]);
    }
    args.idempotency_key = headerKey; // the request's own parsed body: no one else holds it
  }
  const parsed = tool.input.safeParse(args, { error: missingField });
  if (!parsed.success) throw validationError(zodIssues(parsed.error, inputJsonSchema(tool)));
  return parsed.data as Record<string, unknown>;
}

const inGrace = (tool: Tool, until: string) =>
  new AppError(
    "FORBIDDEN",
    `This API key was replaced by rotate_api_key: until ${until} it only finishes work in flight, and ${tool.name} is not part of that.`,
    { grace_until: until },
    undefined,
    "Call again with the new API key that rotate_api_key returned.",
  );

const rateLimited = (d: RateDecision) => new AppError("RATE_LIMITED", "Too many requests.", undefined, d.resetSeconds);

/**
 * Each made-up token has a bucket of its own, so a credential that fails also spends its address's public limit,
 * over every transport: the refusal and its headers once that is spent, else null.
 */
export function chargeFailedCredential(svc: Services, address: string): { error: AppError; headers: Record<string, string> } | null {
  const d = svc.limiter.take(`addr:${address}`, "address", svc.config.publicRateLimit);
  return d.allowed ? null : { error: rateLimited(d), headers: rateLimitHeaders(d) };
}

function attemptKey(tool: Tool, p: Principal, args: Record<string, unknown>): string | null {
  const g = tool.attempts!.guess(args);
  return g === null ? null : `${tool.name}:${g}:${p.agentId}`;
}

/** The one entry of every transport. A call is admitted here, then runs where the server runs it (Services.cluster). */
export async function invoke(svc: Services, name: string, raw: unknown, meta: CallMeta): Promise<CallResult> {
  const call: Call = { name, raw, meta, tokenHash: null, headers: {}, keyRemaining: null, agentTaken: false };
  const seen: Seen = { call, started: performance.now(), principal: null };
  try {
    const tool = toolNamed(name);
    limit(svc, call, tool);
    // Before anything reads them, or they are sent on: JSON would change them on the way.
    const unkept = unkeptValue(raw);
    if (unkept) throw validationError([unkept]);
    if (meta.sandbox) return finished(svc, seen, dryRun(tool, call));
    return await (svc.cluster?.run?.(svc, call) ?? run(svc, call, tool));
  } catch (err) {
    return failed(svc, seen, err);
  }
}

/**
 * Which transaction a call runs in: a write one; a read one, run again as a write one if the tool finds it must
 * write; or a read one that leaves NeedsWrite to the caller, to run the call as a write elsewhere.
 */
export type TxChoice = "write" | "read" | "read only";

/** Runs a call invoke admitted, in this process: one transaction, the last use of a read's client, the envelope data. */
export async function run(svc: Services, call: Call, tool = toolNamed(call.name), choice: TxChoice = tool.writes ? "write" : "read"): Promise<CallResult> {
  const r: Running = { call, tool, started: performance.now(), now: svc.config.clock.now(), principal: null, auth: null, guess: null };
  try {
    if (needsCredential(tool, call.meta) && !call.meta.token) throw new AppError("UNAUTHENTICATED", "This tool needs a credential.");
    const answer = await transaction(svc, r, choice).catch((err) => countFailedGuess(svc, r, err));
    const { data, replayed, summaryFor } = answer;
    const audit = tool.audit && !replayed ? tool.audit((call.raw ?? {}) as Record<string, unknown>, data) : undefined;
    return finished(
      svc,
      r,
      { ok: true, data, replayed, headers: call.headers, ...(summaryFor && { summaryFor }) },
      { wrote: tool.isWrite && !replayed, audit },
    );
  } catch (err) {
    if (err instanceof NeedsWrite && choice === "read only") throw err;
    return failed(svc, r, err);
  }
}

/** What a finished call is observed with. */
interface Seen {
  call: Call;
  started: number;
  principal: Principal | null;
}

/** A call running in this process: what its transaction found out. */
interface Running extends Seen {
  tool: Tool;
  now: Date;
  auth: Authenticated | null;
  /** The attempt key of a call that guesses at a secret (Tool.attempts). */
  guess: string | null;
}

interface Answer {
  data: Record<string, unknown>;
  replayed: boolean;
  ranAsRead: boolean;
  /** Whose inbox summary the process that sent the call reads (CallMeta.summaryBySender). */
  summaryFor?: Actor;
  /** A write's inbox summary, read with its COMMIT where it can be (summaryOnCommit). */
  onCommit?: Promise<InboxSummary>;
}

function toolNamed(name: string): Tool {
  const tool = findTool(name);
  if (!tool) throw noSuchTool(name);
  return tool;
}

/** An unknown tool, named with the one most likely meant; the hint holds over every transport. */
export function noSuchTool(name: string): AppError {
  const meant = nearestTool(name);
  return new AppError(
    "NOT_FOUND",
    `There is no tool named '${name}'${meant ? `; did you mean ${meant}?` : "."}`,
    meant ? { did_you_mean: meant } : undefined,
    undefined,
    `${meant ? `Call ${meant}. ` : ""}The tools are listed by tools/list over MCP and GET /v1/tools over REST.`,
  );
}

const needsCredential = (tool: Tool, meta: CallMeta) => !tool.isPublic && !meta.sandbox;

/** The caller's limit: by credential, or by client address for a call without one (public tools, the sandbox). */
function limit(svc: Services, call: Call, tool: Tool): void {
  const token = needsCredential(tool, call.meta) ? call.meta.token : null;
  call.tokenHash = token ? sha256(token) : null;
  const d = call.tokenHash
    ? svc.limiter.take(`key:${call.tokenHash}`, "credential", svc.config.rateLimit)
    : svc.limiter.take(`addr:${call.meta.clientAddress()}`, "address", svc.config.publicRateLimit);
  if (call.tokenHash) call.keyRemaining = d.remaining;
  call.headers = rateLimitHeaders(d);
  if (!d.allowed) throw rateLimited(d);
}

/** All clients of one agent share a budget too, so more keys do not buy more calls; the headers show the closer limit. */
function limitAgent(svc: Services, call: Call, agentId: string): void {
  if (call.agentTaken) return;
  call.agentTaken = true;
  const d = svc.limiter.take(`agent:${agentId}`, "agent", svc.config.agentRateLimit);
  if (!d.allowed || call.keyRemaining === null || d.remaining < call.keyRemaining) call.headers = rateLimitHeaders(d);
  if (!d.allowed) throw rateLimited(d);
}

function dryRun(tool: Tool, call: Call): CallResult {
  const args = parseArguments(tool, call.raw, call.meta.idempotencyKey);
  return { ok: true, data: { valid: true, tool: tool.name, arguments: args, suggested_next: [tool.name] }, headers: call.headers, replayed: false };
}

async function transaction(svc: Services, r: Running, choice: TxChoice): Promise<Answer> {
  const steps = (tx: Tx) => inTransaction(svc, r, tx);
  if (choice === "write") return withSummary(svc, r, await svc.db.tx(steps));
  try {
    return { ...(await svc.db.read(steps)), ranAsRead: true };
  } catch (err) {
    if (!(err instanceof NeedsWrite && r.tool.writesWhenNeeded && choice === "read")) throw err;
    return withSummary(svc, r, await svc.db.tx(steps));
  }
}

/**
 * A write's answer gets its inbox summary once committed: on a remote primary, read with the COMMIT
 * (summaryOnCommit), else from a read transaction. Not in the write one, since every write waits for the one
 * writer, and on a remote primary each of the summary's statements is a round trip held there. The write has
 * committed, so a summary that cannot be read is left out (it is optional), not made a failure.
 */
async function withSummary(svc: Services, r: Running, { onCommit, ...written }: Omit<Answer, "ranAsRead">): Promise<Answer> {
  const actor = r.principal;
  if (r.tool.inboxSummary && actor) {
    const read = await onCommit?.catch(() => null);
    if (read) written.data.inbox = read;
    else if (r.call.meta.summaryBySender) return { ...written, ranAsRead: false, summaryFor: { agentId: actor.agentId, handle: actor.handle } };
    else await addSummary(svc, written.data, actor, r.now);
  }
  return { ...written, ranAsRead: false };
}

/** A written answer's inbox summary, of actor's inbox as committed; left out when it cannot be read. */
export async function addSummary(svc: Services, data: Record<string, unknown>, actor: Actor, now: Date): Promise<void> {
  const inbox = await svc.db.read((tx) => summary({ tx, now, actor })).catch(() => undefined);
  if (inbox) data.inbox = inbox;
}

/** The steps that need the database, in the call's one transaction. */
async function inTransaction(svc: Services, r: Running, tx: Tx): Promise<Omit<Answer, "ranAsRead">> {
  // When this process knows whose the credential is, a key's record is read beside the authentication, and a write
  // tool's first statements go with them (runAhead): one round trip to a remote primary, not three. The
  // authentication still decides: the record is looked at, and the tool sees an answer, only once it has.
  const seen = needsCredential(r.tool, r.call.meta) && r.call.tokenHash ? svc.owners.get(r.call.tokenHash) : undefined;
  // Read once, here only when the tool may run ahead; refused arguments are told only after the authentication.
  const parsed = seen && !isReadOnly(tx) ? argumentsOf(r) : undefined;
  const toolAhead = seen && parsed && "args" in parsed ? runAhead(svc, r, tx, seen, parsed.args) : null;
  try {
    return await authenticatedRun(svc, r, tx, seen, parsed, toolAhead);
  } finally {
    // Unless it was taken (then this does nothing).
    toolAhead?.drop();
  }
}

async function authenticatedRun(
  svc: Services,
  r: Running,
  tx: Tx,
  seen: Principal | undefined,
  parsed: Parsed | undefined,
  toolAhead: ReturnType<typeof runAhead>,
): Promise<Omit<Answer, "ranAsRead">> {
  const { tool, call } = r;
  const ahead = tool.idempotent && seen ? readAhead(call, seen.agentId, tx) : null;
  if (needsCredential(tool, call.meta)) await authenticateIn(svc, r, tx);
  const read = parsed ?? argumentsOf(r);
  if ("refused" in read) throw read.refused;
  const { args } = read;
  const key = tool.idempotent && r.principal ? (args.idempotency_key as string) : null;
  const hash = key ? requestHash(tool.name, args) : "";
  const replay = tool.replay && !tool.shownOnce?.(args);
  const agentId = r.principal?.agentId;
  const early = key ? await ahead : null;
  // What was read ahead counts only when it is this agent's record of this key.
  const rec = !key ? undefined : early && early.agentId === agentId && early.key === key ? early.rec : await recordOf(tx, agentId!, key);
  const stored = key ? answer(rec, hash, replay) : null;
  // The tool run ahead counts only when nothing is replayed and the credential is what it was taken to be.
  const taken = !stored && toolAhead && samePrincipal(toolAhead.principal, r.principal) ? toolAhead.take() : null;
  if (!taken) toolAhead?.drop();
  const data = stored ?? (await (taken ?? runTool(svc, r, tx, args)));
  if (key && !stored) await remember(tx, agentId!, key, tool.name, hash, replay ? data : null, r.now);
  if (!tool.inboxSummary || !r.principal) return { data, replayed: stored !== null };
  // A write's summary is read with or after its commit (withSummary).
  if (!isReadOnly(tx)) return { data, replayed: stored !== null, onCommit: summaryOnCommit({ tx, now: r.now, actor: r.principal }) };
  data.inbox = await summary({ tx, now: r.now, actor: r.principal });
  return { data, replayed: stored !== null };
}

/**
 * The record of the call's idempotency key, for the agent the credential was last seen to be; null when the arguments
 * name no key. Never fails: a failed read is read again after the authentication.
 */
function readAhead(call: Call, agentId: string, tx: Tx): Promise<{ agentId: string; key: string; rec: KeyRecord } | null> | null {
  const key = namedKey(call);
  if (!key) return null;
  return recordOf(tx, agentId, key).then(
    (rec) => ({ agentId, key, rec }),
    () => null,
  );
}

/**
 * The tool run as the principal the credential was last seen to be, before the authentication has answered: its
 * statements go out now, in the authentication's request where they are issued together, and their answers reach
 * the tool only once take() says the guess held; a write waits for that before it is sent at all (db/connections.ts
 * sendAhead). drop() ends it unseen, having written nothing. null where sending early saves nothing (a local file).
 */
function runAhead(svc: Services, r: Running, tx: Tx, principal: Principal, args: Record<string, unknown>) {
  const gate = new Gate();
  const handle = sendAhead(tx, gate);
  if (!handle) return null;
  const ahead: Running = { ...r, principal };
  const run = runTool(svc, ahead, handle, args);
  run.catch(() => undefined);
  return {
    principal,
    take(): Promise<Record<string, unknown>> {
      gate.open();
      // The attempt key its run took (runTool), for countFailedGuess.
      return run.finally(() => (r.guess = ahead.guess));
    },
    drop: () => gate.refuse(),
  };
}

type Parsed = { args: Record<string, unknown> } | { refused: unknown };

/** The call's arguments as its tool takes them, or the error that refuses them. */
function argumentsOf({ tool, call }: Running): Parsed {
  try {
    return { args: parseArguments(tool, call.raw, call.meta.idempotencyKey) };
  } catch (refused) {
    return { refused };
  }
}

/** Whether two authentications found the same principal (then a tool run as either runs alike). */
function samePrincipal(a: Principal, b: Principal | null): boolean {
  if (!b) return false;
  const keys = Object.keys(a) as (keyof Principal)[];
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => {
    const x = a[k];
    const y = b[k];
    if (x instanceof Set && y instanceof Set) return x.size === y.size && [...x].every((v) => y.has(v));
    return x === y;
  });
}

/** The credential, the agent's limit, the client's last use (noted, written in batches: LastUse) and the tool's scope. */
async function authenticateIn(svc: Services, r: Running, tx: Tx): Promise<void> {
  const auth = await authenticate(tx, r.call.meta.token!, r.now, r.call.tokenHash!, { page: r.call.meta.page });
  if (!auth) throw new AppError("UNAUTHENTICATED", "The credential is missing, invalid, expired or revoked.");
  r.auth = auth;
  r.principal = auth.principal;
  svc.owners.seen(r.call.tokenHash!, auth.principal);
  limitAgent(svc, r.call, auth.principal.agentId);
  if (auth.touchDue) svc.lastUse.note(auth.principal.clientId, r.now);
  if (!auth.principal.scopes.has(r.tool.scope)) {
    throw new AppError("FORBIDDEN", `This credential lacks the scope ${r.tool.scope}.`, { required_scope: r.tool.scope });
  }
}

/** The tool itself, once no stored answer replays it: its answer checked against its output schema. */
async function runTool(svc: Services, r: Running, tx: Tx, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { tool, principal, now } = r;
  // After the lookup: a retry of a call made before the rotation still gets its stored answer.
  if (tool.refusedInGrace && principal?.graceUntil) throw inGrace(tool, principal.graceUntil);
  r.guess = tool.attempts && principal ? attemptKey(tool, principal, args) : null;
  if (r.guess) await checkAttempts(tx, now, r.guess, tool.attempts!);
  const ctx: ToolContext = { tx, now, config: svc.config, requestId: r.call.meta.requestId, actor: principal };
  const checked = tool.output.safeParse(await tool.run(ctx, args));
  if (!checked.success) throw new Error(`${tool.name} answered outside its output schema: ${checked.error.message}`);
  if (r.guess) await recordAttempt(tx, now, r.guess, tool.attempts!);
  // A tool that builds its list from several sources (get_inbox: each item's tools, then ack_inbox) names each once.
  const data = checked.data as Record<string, unknown> & { suggested_next: string[] };
  data.suggested_next = [...new Set(data.suggested_next)];
  return data;
}

/** A failed guess rolls its transaction back, so it is counted again in one of its own. */
async function countFailedGuess(svc: Services, r: Running, err: unknown): Promise<never> {
  const g = r.guess;
  const notAFailure = err instanceof NeedsWrite || (err instanceof AppError && err.code === "RATE_LIMITED");
  if (g && !notAFailure) await svc.db.tx((tx) => recordAttempt(tx, r.now, g, r.tool.attempts!));
  throw err;
}

function failed(svc: Services, seen: Seen, err: unknown): CallResult {
  let error = toAppError(err);
  let headers = seen.call.headers;
  const meta = seen.call.meta;
  const limited = error.code === "UNAUTHENTICATED" && meta.token ? chargeFailedCredential(svc, meta.clientAddress()) : null;
  if (limited) ({ error, headers } = limited);
  if (error.retryAfter !== undefined) headers = { ...headers, "Retry-After": String(error.retryAfter) };
  return finished(
    svc,
    seen,
    { ok: false, error, headers },
    error.status >= 500 ? { cause: describeCause(err), sqliteCode: storageFault(err) ?? undefined } : {},
  );
}

function finished(svc: Services, seen: Seen, r: CallResult, extra: Pick<CallEvent, "cause" | "sqliteCode" | "wrote" | "audit"> = {}): CallResult {
  svc.observe?.({
    ...extra,
    clientAddress: seen.call.meta.clientAddress,
    tool: seen.call.name,
    requestId: seen.call.meta.requestId,
    agentId: seen.principal?.agentId ?? null,
    code: r.ok ? "OK" : r.error.code,
    ms: performance.now() - seen.started,
  });
  return r;
}
