// THE pipeline every transport calls: limit -> authenticate -> scope -> validate -> idempotency
// -> run in one transaction -> check the answer -> envelope data. Transports only translate.
// A tool that writes runs in a write transaction; any other in a read one (local on an embedded replica).
import type { ZodError } from "zod";
import { isReadOnly, NeedsWrite, type Tx } from "../../db/client.ts";
import { authenticate, recordUse, type Authenticated } from "../auth/authenticate.ts";
import { checkAttempts, recordAttempt } from "../domain/attempts.ts";
import { summary } from "../domain/inbox.ts";
import { sha256 } from "../auth/secrets.ts";
import { AppError, describeCause, storageFault, toAppError, type Issue } from "../errors.ts";
import { rateLimitHeaders, type RateDecision } from "../rate-limit.ts";
import type { CallEvent, CallMeta, CallResult, Services } from "../services.ts";
import { findTool } from "./catalogue.ts";
import type { Tool, ToolContext } from "./define.ts";
import type { Principal } from "../contract/principal.ts";
import { lookup, remember, requestHash } from "./idempotency.ts";
import { unkeptValue } from "./json-values.ts";

export function zodIssues(err: ZodError): Issue[] {
  return err.issues.map((i) => ({ path: i.path.length ? i.path.join(".") : "(arguments)", message: i.message }));
}

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
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) throw validationError(zodIssues(parsed.error));
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

export async function invoke(svc: Services, name: string, raw: unknown, meta: CallMeta): Promise<CallResult> {
  const started = performance.now();
  let headers: Record<string, string> = {};
  let principal: Principal | null = null;
  let keyDecision: RateDecision | null = null;
  let agentTaken = false;
  const finish = (r: CallResult, extra: Pick<CallEvent, "cause" | "sqliteCode" | "wrote"> = {}): CallResult => {
    svc.observe?.({
      ...extra,
      tool: name,
      requestId: meta.requestId,
      agentId: principal?.agentId ?? null,
      code: r.ok ? "OK" : r.error.code,
      ms: performance.now() - started,
    });
    return r;
  };
  try {
    const tool = findTool(name);
    if (!tool) throw new AppError("NOT_FOUND", `There is no tool named '${name}'.`, undefined, undefined, "GET /v1/tools lists every tool.");
    const authed = !tool.isPublic && !meta.sandbox;
    // Hashed once: the rate limiter's key and the API key lookup both use it.
    const tokenHash = authed && meta.token ? sha256(meta.token) : null;
    if (meta.rateHeaders) headers = meta.rateHeaders;
    else {
      const decision = tokenHash
        ? svc.limiter.take(`key:${tokenHash}`, "credential", svc.config.rateLimit)
        : svc.limiter.take(`addr:${meta.clientAddress()}`, "address", svc.config.publicRateLimit);
      if (tokenHash) keyDecision = decision;
      headers = rateLimitHeaders(decision);
      if (!decision.allowed) {
        throw rateLimited(decision);
      }
    }
    // Before anything reads them, and before they may cross to another process (server/cluster.ts).
    const unkept = unkeptValue(raw);
    if (unkept) throw validationError([unkept]);
    // A worker of svc serve --workers hands every write to the primary, which runs the whole call (and logs it); a
    // call that cannot be sent there (forward answers null) runs here.
    const forward = svc.forward && !meta.sandbox ? svc.forward : null;
    const forwarded = () =>
      forward!({
        name,
        raw,
        meta: { requestId: meta.requestId, token: meta.token, idempotencyKey: meta.idempotencyKey, address: meta.clientAddress(), rateHeaders: headers },
      });
    const handed = forward && tool.writes ? await forwarded() : null;
    if (handed) return handed;
    if (meta.sandbox) {
      const args = parseArguments(tool, raw, meta.idempotencyKey);
      return finish({ ok: true, data: { valid: true, tool: tool.name, arguments: args, suggested_next: [tool.name] }, headers, replayed: false });
    }
    if (authed && !meta.token) throw new AppError("UNAUTHENTICATED", "This tool needs a credential.");
    const now = svc.config.clock.now();
    // A failed guess rolls its transaction back, so it is counted again in one of its own.
    let guess: string | null = null;
    let auth: Authenticated | null = null;
    const call = async (tx: Tx) => {
      if (authed) {
        auth = await authenticate(tx, meta.token!, now, tokenHash!);
        if (!auth) throw new AppError("UNAUTHENTICATED", "The credential is missing, invalid, expired or revoked.");
        principal = auth.principal;
        // All clients of one agent share a budget too, so more keys do not buy more calls. Taken once per call
        // (a read that must write runs this again); the headers show whichever limit is closer.
        if (!agentTaken) {
          agentTaken = true;
          const d = svc.limiter.take(`agent:${principal.agentId}`, "agent", svc.config.agentRateLimit);
          if (!d.allowed || !keyDecision || d.remaining < keyDecision.remaining) headers = rateLimitHeaders(d);
          if (!d.allowed) throw rateLimited(d);
        }
        if (!isReadOnly(tx)) await recordUse(tx, auth, now);
        if (!principal.scopes.has(tool.scope)) {
          throw new AppError("FORBIDDEN", `This credential lacks the scope ${tool.scope}.`, { required_scope: tool.scope });
        }
      }
      const args = parseArguments(tool, raw, meta.idempotencyKey);
      const key = tool.idempotent && principal ? (args.idempotency_key as string) : null;
      const hash = key ? requestHash(tool.name, args) : "";
      const stored = key ? await lookup(tx, principal!.agentId, key, hash, tool.replay) : null;
      let data: Record<string, unknown>;
      if (stored) {
        data = stored;
      } else {
        // After the lookup: a retry of a call made before the rotation still gets its stored answer.
        if (tool.refusedInGrace && principal?.graceUntil) throw inGrace(tool, principal.graceUntil);
        guess = tool.attempts && principal ? attemptKey(tool, principal, args) : null;
        if (guess) await checkAttempts(tx, now, guess, tool.attempts!);
        const ctx: ToolContext = { tx, now, config: svc.config, requestId: meta.requestId, actor: principal };
        const answer = await tool.run(ctx, args);
        const checked = tool.output.safeParse(answer);
        if (!checked.success) throw new Error(`${tool.name} answered outside its output schema: ${checked.error.message}`);
        data = checked.data as Record<string, unknown>;
        if (key) await remember(tx, principal!.agentId, key, tool.name, hash, tool.replay ? data : null, now);
        if (guess) await recordAttempt(tx, now, guess, tool.attempts!);
      }
      if (tool.inboxSummary && principal) data.inbox = await summary({ tx, now, actor: principal });
      return { data, replayed: stored !== null };
    };
    // A read tool runs in a read transaction; one that finds it must write after all (NeedsWrite) runs again in a write one.
    let ranAsRead = !tool.writes;
    const result = await (tool.writes ? svc.db.tx(call) : svc.db.read(call))
      .catch(async (err) => {
        if (!(err instanceof NeedsWrite && tool.writesWhenNeeded)) throw err;
        ranAsRead = false;
        const handed = forward ? await forwarded() : null;
        return handed ? { handed } : await svc.db.tx(call);
      })
      .catch(async (err) => {
        const g = guess;
        if (g && !(err instanceof AppError && err.code === "RATE_LIMITED")) await svc.db.tx((tx) => recordAttempt(tx, now, g, tool.attempts!));
        throw err;
      });
    if ("handed" in result) return result.handed;
    // A read transaction writes nothing, so a read call's last use is recorded after it, in a small write.
    const used = auth as Authenticated | null;
    if (used?.touchDue && ranAsRead) await svc.db.tx((tx) => recordUse(tx, used, now));
    return finish({ ok: true, data: result.data, replayed: result.replayed, headers }, { wrote: tool.isWrite && !result.replayed });
  } catch (err) {
    let error = toAppError(err);
    const limited = error.code === "UNAUTHENTICATED" && meta.token ? chargeFailedCredential(svc, meta.clientAddress()) : null;
    if (limited) ({ error, headers } = limited);
    if (error.retryAfter !== undefined) headers = { ...headers, "Retry-After": String(error.retryAfter) };
    return finish({ ok: false, error, headers }, error.status >= 500 ? { cause: describeCause(err), sqliteCode: storageFault(err) ?? undefined } : {});
  }
}
