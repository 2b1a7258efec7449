// THE pipeline every transport calls, read top to bottom: admit (rate limit, values) -> one call on the database:
// authenticate -> the agent's limit -> scope -> validate -> idempotency -> run the tool -> check its answer ->
// remember -> inbox summary; then the envelope data. Transports only translate.
// A tool that writes runs as a write call (db.tx): it reads, then its writes, its idempotency record and the inbox
// items it makes go to the database as one batch, which also reads its inbox summary. Any other tool runs as a read
// call, and as a write call after all if it finds it must write (NeedsWrite).
import { isReadOnly, NeedsWrite, type Tx } from "../../db/client.ts";
import { authenticate } from "../auth/authenticate.ts";
import { guardCredential } from "../auth/credentials.ts";
import { recordAttempt, takeAttempt } from "../domain/attempts.ts";
import { summary } from "../domain/inbox.ts";
import { sha256 } from "../auth/secrets.ts";
import { AppError, describeCause, storageFault, toAppError } from "../errors.ts";
import { parseArguments, validationError } from "./arguments.ts";
import { rateLimitHeaders, type RateDecision } from "../rate-limit.ts";
import type { Call, CallEvent, CallMeta, CallResult, Services } from "../services.ts";
import { findTool, nearestTool } from "./catalogue.ts";
import type { Tool, ToolContext } from "./define.ts";
import type { Principal } from "../contract/principal.ts";
import type { InboxSummary } from "../contract/wire.ts";
import { answer, AnswerPending, answerLost, keepApart, recordOf, remember, requestHash } from "./idempotency.ts";
import { unkeptValue } from "./json-values.ts";
import { ToHome } from "../domain/ledger/events/home.ts";
import { forwardToHome } from "../federation/forward.ts";

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

/** The one entry of every transport: the call admitted, then run as one read or write call on the database. */
export async function invoke(svc: Services, name: string, raw: unknown, meta: CallMeta): Promise<CallResult> {
  const call: Call = { name, raw, meta, tokenHash: null, headers: {}, keyRemaining: null, agentLimit: null };
  const r: Running = { call, started: performance.now(), principal: null, tool: null, now: svc.config.clock.now(), guess: null };
  try {
    const tool = (r.tool = toolNamed(name));
    limit(svc, call, tool);
    // Before anything reads them: JSON would change them on the way.
    const unkept = unkeptValue(raw);
    if (unkept) throw validationError([unkept]);
    if (meta.sandbox) return finished(svc, r, dryRun(tool, call));
    if (needsCredential(tool, meta) && !meta.token && !meta.principal) throw new AppError("UNAUTHENTICATED", "This tool needs a credential.");
    // A write to a group kept on another server goes there, once this call's transaction is over (forward.ts).
    const toHome = (err: ToHome) => forwardToHome(svc, err, tool, r.principal!, parseArguments(tool, raw, meta.idempotencyKey));
    const { data, replayed } = await transaction(svc, r, tool).catch((err) => (err instanceof ToHome ? toHome(err) : countFailedGuess(svc, r, tool, err)));
    const audit = tool.audit && !replayed ? tool.audit((raw ?? {}) as Record<string, unknown>, data) : undefined;
    return finished(svc, r, { ok: true, data, replayed, headers: call.headers }, { wrote: tool.isWrite && !replayed, audit });
  } catch (err) {
    return failed(svc, r, err);
  }
}

/** A call on its way: what its database call found out. */
interface Running {
  call: Call;
  started: number;
  tool: Tool | null;
  now: Date;
  principal: Principal | null;
  /** The attempt key of a call that guesses at a secret (Tool.attempts). */
  guess: string | null;
}

interface Answer {
  data: Record<string, unknown>;
  replayed: boolean;
  /** A write's inbox summary, read as its batch commits. */
  inbox?: Promise<InboxSummary>;
  /** The answer to keep for the key, when the batch went before the tool had answered (remember). */
  keepApart?: { agentId: string; key: string };
}

// How long a retry waits for the answer of the call it repeats, still being answered (AnswerPending).
const PENDING_WAITS_MS = [20, 50, 100, 200, 400, 800];

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
  // Taken once a call: a call run again (a replica's judgedAgain) is neither counted twice nor let through.
  const d = (call.agentLimit ??= svc.limiter.take(`agent:${agentId}`, "agent", svc.config.agentRateLimit));
  if (!d.allowed || call.keyRemaining === null || d.remaining < call.keyRemaining) call.headers = rateLimitHeaders(d);
  if (!d.allowed) throw rateLimited(d);
}

function dryRun(tool: Tool, call: Call): CallResult {
  const args = parseArguments(tool, call.raw, call.meta.idempotencyKey);
  return { ok: true, data: { valid: true, tool: tool.name, arguments: args, suggested_next: [tool.name] }, headers: call.headers, replayed: false };
}

async function transaction(svc: Services, r: Running, tool: Tool): Promise<Answer> {
  const steps = (tx: Tx) => inCall(svc, r, tool, tx);
  let answer: Answer;
  for (let wait = 0; ; wait++) {
    try {
      answer = tool.writes
        ? await svc.db.tx(steps, { asItIs: tool.guarded })
        : await svc.db.read(steps).catch((err) => (err instanceof NeedsWrite && tool.writesWhenNeeded ? svc.db.tx(steps) : Promise.reject(err)));
      break;
    } catch (err) {
      if (!(err instanceof AnswerPending)) throw err;
      if (wait >= PENDING_WAITS_MS.length) throw answerLost(err.tool);
      await Bun.sleep(PENDING_WAITS_MS[wait]!);
    }
  }
  const { data, inbox, keepApart: kept } = answer;
  if (kept) await svc.db.tx((tx) => keepApart(tx, kept.agentId, kept.key, data));
  if (inbox) data.inbox = await inbox;
  return { data, replayed: answer.replayed };
}

/** The steps that need the database, in the call's one read or write call (a write call's may run again). */
async function inCall(svc: Services, r: Running, tool: Tool, tx: Tx): Promise<Answer> {
  const { call } = r;
  if (call.meta.principal) r.principal = call.meta.principal;
  else if (needsCredential(tool, call.meta)) await authenticateIn(svc, r, tool, tx);
  const args = parseArguments(tool, call.raw, call.meta.idempotencyKey);
  const agentId = r.principal?.agentId;
  const key = tool.idempotent && agentId ? (args.idempotency_key as string) : null;
  const hash = key ? requestHash(tool.name, args) : "";
  const replay = tool.replay && !tool.shownOnce?.(args);
  const stored = key ? answer(await recordOf(tx, agentId!, key), hash, replay) : null;
  const keep = key && !stored ? await remember(tx, agentId!, key, tool.name, hash, r.now) : null;
  const data = stored ?? (await runTool(svc, r, tool, tx, args));
  const kept = keep && replay && !keep(data) ? { keepApart: { agentId: agentId!, key: key! } } : {};
  if (!tool.inboxSummary || !r.principal) return { data, replayed: stored !== null, ...kept };
  const inbox = summary({ tx, now: r.now, actor: r.principal });
  // A read call reads it now; a write call's comes with its batch's commit.
  if (isReadOnly(tx)) data.inbox = await inbox;
  return { data, replayed: stored !== null, ...kept, ...(!isReadOnly(tx) && { inbox }) };
}

/** The credential, the agent's limit, the client's last use (noted, written in batches: LastUse) and the tool's scope. */
async function authenticateIn(svc: Services, r: Running, tool: Tool, tx: Tx): Promise<void> {
  const auth = await authenticate(tx, r.call.meta.token!, r.now, r.call.tokenHash!, { page: r.call.meta.page });
  if (!auth) throw new AppError("UNAUTHENTICATED", "The credential is missing, invalid, expired or revoked.");
  r.principal = auth.principal;
  await guardCredential(tx, auth.principal, r.call.tokenHash);
  limitAgent(svc, r.call, auth.principal.agentId);
  if (auth.touchDue) svc.lastUse.note(auth.principal.clientId, r.now);
  if (!auth.principal.scopes.has(tool.scope)) {
    throw new AppError("FORBIDDEN", `This credential lacks the scope ${tool.scope}.`, { required_scope: tool.scope });
  }
}

/** The tool itself, once no stored answer replays it: its answer checked against its output schema. */
async function runTool(svc: Services, r: Running, tool: Tool, tx: Tx, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { principal, now } = r;
  // After the lookup: a retry of a call made before the rotation still gets its stored answer.
  if (tool.refusedInGrace && principal?.graceUntil) throw inGrace(tool, principal.graceUntil);
  r.guess = tool.attempts && principal ? attemptKey(tool, principal, args) : null;
  // Counted whether it succeeds or not: a guess that fails is counted again apart, its batch dropped (countFailedGuess).
  if (r.guess) await takeAttempt(tx, now, r.guess, tool.attempts!);
  const ctx: ToolContext = { tx, now, config: svc.config, requestId: r.call.meta.requestId, actor: principal };
  const checked = tool.output.safeParse(await tool.run(ctx, args));
  if (!checked.success) throw new Error(`${tool.name} answered outside its output schema: ${checked.error.message}`);
  // A tool that builds its list from several sources (get_inbox: each item's tools, then ack_inbox) names each once.
  const data = checked.data as Record<string, unknown> & { suggested_next: string[] };
  data.suggested_next = [...new Set(data.suggested_next)];
  return data;
}

/** A failed guess rolls its transaction back, so it is counted again in one of its own. */
async function countFailedGuess(svc: Services, r: Running, tool: Tool, err: unknown): Promise<never> {
  const g = r.guess;
  const notAFailure = err instanceof NeedsWrite || (err instanceof AppError && err.code === "RATE_LIMITED");
  if (g && !notAFailure) await svc.db.tx((tx) => recordAttempt(tx, r.now, g, tool.attempts!));
  throw err;
}

function failed(svc: Services, seen: Running, err: unknown): CallResult {
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

function finished(svc: Services, seen: Running, r: CallResult, extra: Pick<CallEvent, "cause" | "sqliteCode" | "wrote" | "audit"> = {}): CallResult {
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
