import type { AuditEntry } from "../contract/audit.ts";
import { z } from "zod";
import type { Tx } from "../../db/client.ts";
import type { ServerConfig } from "../config.ts";
import type { AttemptLimit } from "../domain/attempts.ts";
import type { View } from "../views/index.ts";
import type { DomainContext, Principal, Scope, Tag } from "../contract/principal.ts";
import { IdempotencyKey, InboxSummary } from "../contract/wire.ts";
import { EXAMPLE_IDEMPOTENCY_KEY } from "./made-up.ts";

export interface ToolContext {
  tx: Tx;
  now: Date;
  config: ServerConfig;
  requestId: string;
  /** The caller, null for a public tool called without a credential. */
  actor: Principal | null;
}

/** Context of a tool that needs a credential: the pipeline guarantees the caller, so it is a domain context as it is. */
export interface AuthedContext extends ToolContext, DomainContext<Principal> {
  actor: Principal;
  config: ServerConfig;
}

type AnyObject = z.ZodObject<z.ZodRawShape>;

interface ToolSpec<I extends AnyObject, O extends AnyObject, P extends boolean> {
  name: string;
  title: string;
  description: string;
  tags: Tag[];
  /** Callable without a credential. */
  public?: P;
  /**
   * A read tool that still changes state (marks something seen, creates a link or code) says so: it runs in a
   * write transaction, on a replica's primary. Other read tools run in a read transaction, where a write fails;
   * "when-needed": a read transaction first, run again in a write one when the call finds it must write (NeedsWrite).
   */
  writes?: boolean | "when-needed";
  /** Write tools take an idempotency_key unless this is false (register_agent, join_network, finish_join). */
  idempotent?: boolean;
  /** A retry with the same key replays the stored answer, unless the answer is a secret shown once. */
  replay?: boolean;
  /** Calls whose answer holds a secret shown once (a placeholder's claim code): stored for no replay, as replay false. */
  shownOnce?: (input: z.output<I>) => boolean;
  /**
   * Refused to an API key in its rotation grace period: what would let a leaked old key outlast the rotation
   * (a new key, a settings link, disconnecting clients, changing the identity).
   */
  refusedInGrace?: boolean;
  /**
   * Every decision the tool makes is guarded in its batch (db/query.ts guard) or thrown: on an embedded replica it
   * reads the file as it is, without waiting for what this instance wrote to arrive, and a guard that fails runs it
   * again on a file caught up. Only for a tool whose code was read for it: a refusal it answers as data (a "pending",
   * an item id it skips) would be read from the old file.
   */
  guarded?: boolean;
  /** Adds the `inbox` summary to the answer (default for authenticated tools). */
  inboxSummary?: boolean;
  /** Calls that guess at a secret: the arguments' guess key (null: not a guess) and how many per window. */
  attempts?: AttemptLimit & { guess(input: z.output<I>): string | null };
  /** What a successful call records in the audit trail (server/contract/audit.ts), from its arguments and answer. */
  audit?: (input: Record<string, unknown>, output: z.output<O>) => AuditEntry | undefined;
  /** An MCP Apps view that renders the answer in a host that can show one (server/views). */
  view?: View;
  /** A request body larger than the usual 1 MiB that this tool takes (a file as base64), from the settings. */
  bodyLimit?: (config: ServerConfig) => number;
  input: I;
  output: O;
  /**
   * A call a person would make (nested arguments included), typed by the input so that a wrong one fails the type
   * check; shown by GET /v1/tools, the docs and `svc tools NAME`, and run by test/cli/examples.test.ts.
   */
  example: z.input<I>;
  run(ctx: P extends true ? ToolContext : AuthedContext, input: z.output<I>): Promise<z.input<O>>;
}

export function defineTool<I extends AnyObject, O extends AnyObject, P extends boolean = false>(spec: ToolSpec<I, O, P>) {
  const isWrite = spec.tags.includes("write");
  const idempotent = isWrite && spec.idempotent !== false;
  const isPublic = spec.public === true;
  const input = idempotent ? spec.input.extend({ idempotency_key: IdempotencyKey }) : spec.input;
  const output = spec.output.extend({
    suggested_next: z.array(z.string()),
    ...(spec.inboxSummary === false || isPublic ? {} : { inbox: InboxSummary.optional() }),
  });
  return {
    name: spec.name,
    title: spec.title,
    // The rules a tool shares with others are said in the fields they govern (an idempotency_key's schema says what
    // it is for) and, as an overview, in the server's instructions; a refusal in a rotated key's grace period says
    // itself what to do. trimEnd: a long description lives in a sibling .md file, which ends with a newline.
    description: spec.description.trimEnd(),
    tags: spec.tags,
    isPublic,
    isWrite,
    /** Runs in a write transaction: every write tool, and the read tools that declare writes. */
    writes: isWrite || spec.writes === true,
    writesWhenNeeded: spec.writes === "when-needed",
    idempotent,
    replay: spec.replay !== false,
    shownOnce: spec.shownOnce as ((input: Record<string, unknown>) => boolean) | undefined,
    refusedInGrace: spec.refusedInGrace === true,
    guarded: spec.guarded === true,
    inboxSummary: spec.inboxSummary !== false && !isPublic,
    attempts: spec.attempts as (AttemptLimit & { guess(input: Record<string, unknown>): string | null }) | undefined,
    scope: (isWrite ? "svc:write" : "svc:read") as Scope,
    audit: spec.audit as ((input: Record<string, unknown>, output: Record<string, unknown>) => AuditEntry | undefined) | undefined,
    view: spec.view ?? null,
    bodyLimit: spec.bodyLimit ?? null,
    /** The example call as a REST body (or MCP arguments), with an idempotency_key when the tool takes one. */
    example: (idempotent ? { ...spec.example, idempotency_key: EXAMPLE_IDEMPOTENCY_KEY } : spec.example) as Record<string, unknown>,
    input: input as AnyObject,
    output: output as AnyObject,
    run: spec.run as unknown as (ctx: ToolContext, input: Record<string, unknown>) => Promise<Record<string, unknown>>,
  };
}

export type Tool = ReturnType<typeof defineTool>;
