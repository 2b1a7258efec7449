// A member's write to a group kept on another server: sent to the group's home as a signed request and answered
// there at once, with the caller's idempotency key (a retry replays there, whichever way it comes). The home's answer
// carries the group's events since this server's copy; they are checked and applied here first (copy.ts), so the
// caller then reads its own change. Nothing is queued here: when the home does not answer, the call fails with 503
// and retry_after, and the caller retries with the same key. Runs outside any transaction (the pipeline calls it once
// the call's own transaction gave up the write: ToHome).
import { eq, sql } from "drizzle-orm";
import { z } from "zod";
import { agents, groupHomeAgents, groupHomes } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { AppError, ERROR_CODES, type ErrorCode } from "../errors.ts";
import type { Principal } from "../contract/principal.ts";
import type { Services } from "../services.ts";
import { summary } from "../domain/inbox.ts";
import { homeOf, type ToHome } from "../domain/ledger/events/home.ts";
import { headOf } from "../domain/ledger/events/log.ts";
import { hostAllowed, selfHost } from "./scope.ts";
import { hostBlocked } from "./limits.ts";
import { signedRequest } from "./outbox.ts";
import { receiveGroupEvents } from "./group-events.ts";

/** The writes a member's server sends to a group's home; anything else on a copy is refused here. */
export const FORWARDED_TOOLS = new Set([
  "add_expense",
  "update_expense",
  "delete_expense",
  "restore_expense",
  "respond_expense",
  "record_payment",
  "respond_payment",
  "leave_group",
  "join_group",
  "update_group",
  "archive_group",
  "remove_group_member",
  "stop_recurring",
]);

/** The home's answer to a forwarded call. */
export const HomeAnswer = z.object({
  ok: z.boolean(),
  data: z.record(z.string(), z.unknown()).optional(),
  error: z
    .object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional(), retry_after: z.number().optional() })
    .optional(),
  head_seq: z.number().int().min(0),
  events: z.array(z.object({ body: z.string(), hash: z.string() })).max(100),
});

// The fields of the ledger's tools that name a member: by handle, member_id or (a placeholder) name.
const MEMBER_FIELDS = new Set(["handle", "from", "to", "involving", "member_id", "from_member_id", "to_member_id"]);

/** Seconds a caller waits before retrying when the home did not answer. */
export const HOME_RETRY_AFTER_S = 30;

interface ToolLike {
  name: string;
  output: { safeParse(v: unknown): { success: boolean; data?: unknown } };
}

/** The members of a copy as both servers name them: local agent id and handle <-> the home's agent id. */
async function memberNames(svc: Services, groupId: string) {
  const rows = await svc.db.read((tx) =>
    tx
      .select({ homeId: groupHomeAgents.homeAgentId, agentId: agents.agentId, handle: agents.handle, displayName: agents.displayName })
      .from(groupHomeAgents)
      .innerJoin(agents, eq(agents.agentId, groupHomeAgents.agentId))
      .where(eq(groupHomeAgents.groupId, groupId)),
  );
  const toHome = new Map<string, string>();
  for (const r of rows) {
    toHome.set(r.agentId, r.homeId);
    toHome.set(r.handle, r.homeId);
  }
  return { toHome, fromHome: new Map(rows.map((r) => [r.homeId, r])) };
}

/** The arguments with every member named here named by the home's agent id (the ledger takes a member_id anywhere). */
function argumentsForHome(value: unknown, toHome: Map<string, string>, key = ""): unknown {
  if (typeof value === "string" && MEMBER_FIELDS.has(key)) return toHome.get(value.trim().replace(/^@/, "").toLowerCase()) ?? value;
  if (Array.isArray(value)) return value.map((v) => argumentsForHome(v, toHome, key));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, argumentsForHome(v, toHome, k)]));
  }
  return value;
}

/** The home's answer with its agents named as this server names them (agent refs, member ids, handles). */
function answerForHere(data: unknown, fromHome: Map<string, { agentId: string; handle: string; displayName: string }>): unknown {
  const handles = new Map<string, string>();
  const refs = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(refs);
    if (!v || typeof v !== "object") return v;
    const o = Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, k === "member_id" && typeof x === "string" ? (fromHome.get(x)?.agentId ?? x) : refs(x)]),
    );
    const here = typeof o.agent_id === "string" ? fromHome.get(o.agent_id) : undefined;
    if (!here) return o;
    if (typeof o.handle === "string") handles.set(o.handle, here.handle);
    return {
      ...o,
      agent_id: here.agentId,
      ...("handle" in o ? { handle: here.handle } : {}),
      ...("display_name" in o ? { display_name: here.displayName } : {}),
    };
  };
  const named = (v: unknown, key = ""): unknown => {
    if (typeof v === "string" && MEMBER_FIELDS.has(key)) return handles.get(v) ?? v;
    if (Array.isArray(v)) return v.map((x) => named(x, key));
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, named(x, k)]));
    return v;
  };
  return named(refs(data));
}

const unreachable = (host: string) =>
  new AppError(
    "STORAGE_UNAVAILABLE",
    `The group is kept on the server ${host}, which did not answer. Nothing of this call was stored; reads keep answering from this server's copy.`,
    { home: host },
    HOME_RETRY_AFTER_S,
  );

/** Sends a write on a copy to the group's home and answers as the local call would, or throws its error. */
export async function forwardToHome(
  svc: Services,
  to: ToHome,
  tool: ToolLike,
  principal: Principal,
  args: Record<string, unknown>,
): Promise<{ data: Record<string, unknown>; replayed: boolean }> {
  if (!FORWARDED_TOOLS.has(tool.name)) {
    throw new AppError("CONFLICT", `This group is kept on the server ${to.host}; ${tool.name} cannot change it from here.`, { home: to.host });
  }
  const now = svc.config.clock.now();
  const self = selfHost(svc.config);
  // A code of a group kept elsewhere (join_group with code@host) names no group this server knows yet.
  const byCode = to.groupId === null;
  // A code names a host its holder chose: only a server this one federates with is asked (as for a contact code).
  if (byCode && (!hostAllowed(svc.config.federation!, to.host) || (await svc.db.read((tx) => hostBlocked(tx, to.host))))) {
    throw new AppError("NOT_FOUND", "Invite code not found (no group has it; ask for a fresh one).");
  }
  const [found, head] = byCode
    ? [{ host: to.host, unreachableSince: null }, { seq: 0 }]
    : await svc.db.read(async (tx) => [await homeOf(tx, to.groupId!), await headOf(tx, to.groupId!)] as const);
  if (!found) throw new AppError("CONFLICT", "The group's copy is gone; read it again.");
  const home = found;
  const names = byCode ? { toHome: new Map<string, string>() } : await memberNames(svc, to.groupId!);
  const forHome = argumentsForHome(args, names.toHome) as Record<string, unknown>;
  if (byCode) forHome.invite_code = String(args.invite_code).slice(0, String(args.invite_code).lastIndexOf("@"));
  const body = JSON.stringify({
    origin: self,
    destination: home.host,
    from: `${principal.handle}@${self}`,
    tool: tool.name,
    arguments: forHome,
    ...(byCode ? {} : { group_id: to.groupId }),
    after_seq: head.seq,
  });
  const res = await signedRequest(svc.db, svc.config, home.host, "POST", `/fed/v1/ledger/${crypto.randomUUID()}`, body, now);
  // Reads of the copy say since when the home has not answered (AsOf), until it answers again.
  const answered = res.status !== 0 && res.status < 500;
  if (!byCode && answered !== (home.unreachableSince === null)) {
    await svc.db.tx((tx) =>
      tx
        .update(groupHomes)
        .set({ unreachableSince: answered ? null : sql`coalesce(${groupHomes.unreachableSince}, ${iso(now)})` })
        .where(eq(groupHomes.groupId, to.groupId!)),
    );
  }
  if (!answered) throw unreachable(home.host);
  if (res.status === 429)
    throw new AppError("RATE_LIMITED", "The group's home server asks this server to slow down.", { home: home.host }, Number(res.retryAfter) || 60);
  if (res.status !== 200)
    throw new AppError("FORBIDDEN", `The group's home server ${home.host} refused this server's call.`, { home: home.host, status: res.status });
  let answer: z.infer<typeof HomeAnswer>;
  try {
    answer = HomeAnswer.parse(JSON.parse(res.body));
  } catch {
    throw unreachable(home.host);
  }
  // Joined by code: from now on this server keeps a copy of the group, fed by its home.
  const groupId = to.groupId ?? (answer.ok ? String((answer.data?.group as { group_id?: unknown } | undefined)?.group_id ?? "") : "");
  if (byCode && groupId) {
    await svc.db.tx((tx) =>
      tx
        .insert(groupHomes)
        .values({ groupId, host: home.host, agentId: principal.agentId, syncedAt: iso(now) })
        .onConflictDoNothing(),
    );
  }
  // The events first, so the caller reads its change here; a gap or a refused event leaves the copy as it was.
  if (answer.events.length && groupId) {
    await receiveGroupEvents(svc.db, now, home.host, self, { group_id: groupId, head_seq: answer.head_seq, events: answer.events });
  }
  if (!answer.ok) {
    const e = answer.error;
    const code = e && e.code in ERROR_CODES ? (e.code as ErrorCode) : "INTERNAL";
    throw new AppError(code, e?.message ?? "The group's home server refused the call.", e?.details, e?.retry_after);
  }
  const here = await memberNames(svc, groupId);
  const data = answerForHere(answer.data ?? {}, here.fromHome) as Record<string, unknown>;
  data.inbox = await svc.db.read((tx) => summary({ tx, now, actor: principal }));
  const checked = tool.output.safeParse(data);
  if (!checked.success) throw new Error(`${tool.name} answered by ${home.host} outside its output schema`);
  return { data: checked.data as Record<string, unknown>, replayed: false };
}
