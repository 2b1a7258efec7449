// Joining a handle from another agent: the agent opens a join session and polls it; the human finishes it
// on the join page (proving the handle, or creating one); the first poll after that hands out the API key once.
import { isReservedHandle } from "../contract/handles.ts";
import { and, eq, isNull } from "drizzle-orm";
import { randomInt } from "node:crypto";
import { guardChanged, type Tx } from "../../db/client.ts";
import { agents, joinSessions } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { AppError, conflict, notFound } from "../errors.ts";
import type { Agent, GroupSummary } from "../contract/wire.ts";
import { agentById, toAgent, type AgentRow } from "./agents.ts";
import { noticeClientConnected } from "./clients.ts";
import { newContactCode } from "./contacts.ts";
import { createClient, issueApiKey } from "../auth/credentials.ts";
import { groupView, toSummary } from "./ledger/groups/groups.ts";
import { joinByCode } from "./ledger/groups/invites.ts";
import { newSecret, sha256 } from "../auth/secrets.ts";
import type { DomainContext } from "../contract/principal.ts";

export const JOIN_TTL_MS = 15 * MINUTE;
export const POLL_INTERVAL_SECONDS = 5;
// Consonants only: no words, no 0/O or 1/I confusion; 20^8 codes.
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LENGTH = 8;

export type JoinRow = typeof joinSessions.$inferSelect;
export type JoinStatus = "pending" | "connected" | "denied" | "expired";

/** The canonical form of a typed user code (case, spaces and dashes ignored), or null when it cannot be one. */
export function normaliseUserCode(typed: string): string | null {
  const letters = typed.toUpperCase().replace(/[\s-]/g, "");
  return letters.length === USER_CODE_LENGTH && [...letters].every((c) => USER_CODE_ALPHABET.includes(c)) ? letters : null;
}

export const formatUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

export interface StartJoinInput {
  client_name: string;
  suggested_handle?: string;
  display_name?: string;
  invite_code?: string;
}

export async function startJoin(tx: Tx, now: Date, input: StartJoinInput, baseUrl: string) {
  const userCode = Array.from({ length: USER_CODE_LENGTH }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join("");
  const pollToken = newSecret("join");
  const expiresAt = later(now, JOIN_TTL_MS);
  await tx.insert(joinSessions).values({
    sessionId: crypto.randomUUID(),
    pollTokenHash: sha256(pollToken),
    userCodeHash: sha256(userCode),
    clientName: input.client_name,
    suggestedHandle: input.suggested_handle ?? null,
    displayName: input.display_name ?? null,
    inviteCode: input.invite_code ?? null,
    status: "pending",
    createdAt: iso(now),
    expiresAt,
  });
  const shown = formatUserCode(userCode);
  const enterUrl = `${baseUrl}/join?user_code=${shown}`;
  return {
    enter_url: enterUrl,
    user_code: shown,
    poll_token: pollToken,
    expires_at: expiresAt,
    interval_seconds: POLL_INTERVAL_SECONDS,
    message_for_human: `To connect ${input.client_name} to your svc handle, open ${enterUrl} and check that the code shown is ${shown}. There you confirm your handle (or create one). The code works until ${expiresAt}.`,
  };
}

export const joinStatus = (row: JoinRow, now: Date): JoinStatus => (row.status === "pending" && row.expiresAt <= iso(now) ? "expired" : row.status);

export async function joinById(tx: Tx, sessionId: string): Promise<JoinRow | undefined> {
  return tx.select().from(joinSessions).where(eq(joinSessions.sessionId, sessionId)).get();
}

/** The join session a human is finishing, found by the code they typed; only while it is pending. */
export async function pendingJoinByUserCode(tx: Tx, now: Date, typed: string): Promise<JoinRow | null> {
  const code = normaliseUserCode(typed);
  if (!code) return null;
  const row = await tx
    .select()
    .from(joinSessions)
    .where(eq(joinSessions.userCodeHash, sha256(code)))
    .get();
  return row && joinStatus(row, now) === "pending" ? row : null;
}

async function requirePending(tx: Tx, sessionId: string, now: Date): Promise<JoinRow> {
  const row = await joinById(tx, sessionId);
  if (!row) throw notFound("Join session");
  const status = joinStatus(row, now);
  if (status !== "pending") throw conflict(`This join request is ${status}; ask your app to start again.`);
  return row;
}

/** The human proved (or created) the handle: the session is connected; the key waits for the next poll. */
/** `parentClientId`: the browser's client that approved it; the new client is obtained through it (null for a new handle). */
export async function connectJoin(tx: Tx, now: Date, sessionId: string, agentId: string, created: boolean, parentClientId: string | null): Promise<JoinRow> {
  const row = await requirePending(tx, sessionId, now);
  const patch = { status: "connected" as const, agentId, created, finishedAt: iso(now), parentClientId };
  await tx.update(joinSessions).set(patch).where(eq(joinSessions.sessionId, row.sessionId));
  return { ...row, ...patch };
}

export async function denyJoin(tx: Tx, now: Date, sessionId: string): Promise<void> {
  const row = await requirePending(tx, sessionId, now);
  await tx
    .update(joinSessions)
    .set({ status: "denied", finishedAt: iso(now) })
    .where(eq(joinSessions.sessionId, row.sessionId));
}

export interface FinishJoinResult {
  status: JoinStatus;
  created: boolean | null;
  agent: Agent | null;
  api_key: string | null;
  joined_group: GroupSummary | null;
  suggested_next: string[];
}

/**
 * One poll of a join session. The first poll after the human connected creates the client, issues its key and
 * joins the invite's group, all in this transaction; later polls say connected without the key.
 */
export async function pollJoin(tx: Tx, now: Date, pollToken: string, maxKeys: number): Promise<FinishJoinResult> {
  const row = await tx
    .select()
    .from(joinSessions)
    .where(eq(joinSessions.pollTokenHash, sha256(pollToken)))
    .get();
  if (!row) throw notFound("Join session (check poll_token, or call join_network again)");
  const status = joinStatus(row, now);
  const nothing = { created: null, agent: null, api_key: null, joined_group: null };
  if (status === "pending") return { status, ...nothing, suggested_next: ["finish_join"] };
  if (status !== "connected") return { status, ...nothing, suggested_next: ["join_network"] };
  const agent = (await agentById(tx, row.agentId!))!;
  let apiKey: string | null = null;
  let joinedGroupId = row.joinedGroupId;
  if (!row.keyIssuedAt) {
    const clientId = await createClient(tx, agent.agentId, row.clientName, "api_key", now, { parent: row.parentClientId, maxKeys });
    apiKey = await issueApiKey(tx, clientId, now);
    // A handle that was there before has other apps: they learn of this one (a new handle has nothing else to tell).
    if (!row.created) await noticeClientConnected(tx, now, { agentId: agent.agentId, clientId, name: row.clientName, kind: "api_key", via: "join_network" });
    joinedGroupId = row.inviteCode ? await joinInvitedGroup({ tx, now, actor: agent }, row.inviteCode) : null;
    await tx
      .update(joinSessions)
      .set({ clientId, keyIssuedAt: iso(now), joinedGroupId })
      .where(and(eq(joinSessions.sessionId, row.sessionId), isNull(joinSessions.keyIssuedAt)));
    // The key is handed out once: a poll that read the session before another issued its key (on another instance,
    // or on a replica's file not yet caught up) runs again and finds it issued.
    await guardChanged(tx, "join key issued once");
  }
  return {
    status,
    created: row.created ?? false,
    agent: toAgent(agent),
    api_key: apiKey,
    joined_group: joinedGroupId ? toSummary(await groupView(tx, joinedGroupId, agent.agentId)) : null,
    suggested_next: apiKey ? ["get_me", "get_inbox"] : ["get_me"],
  };
}

/** A stale or used-up invite code must not cost the human their connection: the key is handed out without the group. */
async function joinInvitedGroup(ctx: DomainContext, code: string): Promise<string | null> {
  try {
    return (await joinByCode(ctx, code)).groupId;
  } catch (err) {
    if (err instanceof AppError && (err.code === "NOT_FOUND" || err.code === "CONFLICT")) return null;
    throw err;
  }
}

export interface NewHandle {
  handle: string;
  display_name: string;
  description?: string | null;
}

/** Whether a handle is in use, or was: a retired (joined) handle is never handed out again. */
export async function handleTaken(tx: Tx, handle: string): Promise<boolean> {
  return (await tx.select({ id: agents.agentId }).from(agents).where(eq(agents.handle, handle.toLowerCase())).get()) !== undefined;
}

/** Refused as a taken one is (CONFLICT): a reserved handle would pass for the service or its staff. */
export const reservedHandle = (handle: string) =>
  conflict(`The handle @${handle} is reserved (it could pass for this service or its staff); choose another.`, { reserved: true });

/**
 * A new identity: by register_agent, or on the join page by a human who had no handle yet. `reserved` is the
 * operator's list (ServerConfig.reservedHandles), besides the default one.
 */
export async function createAgent(tx: Tx, now: Date, input: NewHandle, reserved: readonly string[] = []): Promise<AgentRow> {
  if (isReservedHandle(input.handle, reserved)) throw reservedHandle(input.handle);
  if (await handleTaken(tx, input.handle)) throw conflict(`The handle @${input.handle} is taken; choose another.`);
  const row: AgentRow = {
    agentId: crypto.randomUUID(),
    handle: input.handle,
    displayName: input.display_name,
    description: input.description ?? null,
    contactCode: newContactCode(),
    email: null,
    emailVerified: false,
    phoneVerified: false,
    createdAt: iso(now),
    retiredAt: null,
    mergedInto: null,
    disabledAt: null,
    phone: null,
    phoneSetThroughClientId: null,
    deletedAt: null,
  };
  await tx.insert(agents).values(row);
  return row;
}
