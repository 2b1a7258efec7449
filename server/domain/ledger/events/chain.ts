// A group's ledger events as a hash chain: each event's body is its canonical JSON (keys sorted, no spaces), which
// names the hash of the event before it, and its hash is the SHA-256 of that body. A copy can then check every event
// as it arrives, and a history rewritten anywhere (an event changed, left out or put in) breaks the chain from there.
// Pure: no database, so the member's server, the home server and tests check with the same code.
import { createHash } from "node:crypto";

/** The hash before a group's first event. */
export const GENESIS = "0".repeat(64);

/** One ledger change of a group, as the chain holds it; agents are named by the home server's agent ids. */
export interface GroupEventBody {
  v: 1;
  group_id: string;
  seq: number;
  prev_hash: string;
  /** What happened: the group's activity action (expense_added, payment_confirmed, member_joined, ...). */
  type: string;
  actor_id: string;
  at: string;
  refs: Record<string, string>;
  /** The activity line, as the home server wrote it (members' text quoted in it). */
  summary: string;
  /** How the event moved each member's balance, in the group's currency (minor units, as integer text): sums to 0. */
  deltas: Record<string, string>;
  /** The state the event leaves its object in (an expense, a payment, a member), for a copy to store; null if none. */
  data: unknown;
}

export interface GroupEvent {
  body: string;
  hash: string;
}

/** JSON with every object's keys sorted and no spaces: one text for one value, whoever serialises it. */
export function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") {
    // A number is written as ECMAScript writes it (the shortest text that reads back the same), so every svc agrees.
    if (typeof value === "number" && !Number.isFinite(value)) throw new Error("only finite numbers are canonical");
    return JSON.stringify(value ?? null);
  }
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
}

export const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

/** An event sealed: its canonical body and that body's hash. */
export function seal(body: GroupEventBody): GroupEvent {
  const text = canonical(body);
  return { body: text, hash: sha256(text) };
}

/** Whether deltas sum to zero exactly (a group's balances must, after every event). */
export function sumsToZero(deltas: Record<string, string>): boolean {
  let sum = 0n;
  for (const v of Object.values(deltas)) {
    if (!/^-?\d{1,30}$/.test(v)) return false;
    sum += BigInt(v);
  }
  return sum === 0n;
}

/** Why an event cannot follow `prev` (seq and hash of the one before) in group `groupId`; null when it can. */
export function eventProblem(groupId: string, prev: { seq: number; hash: string }, e: GroupEvent): string | null {
  if (sha256(e.body) !== e.hash) return "its hash is not its body's";
  let b: GroupEventBody;
  try {
    b = JSON.parse(e.body);
  } catch {
    return "its body is not JSON";
  }
  if (canonical(b) !== e.body) return "its body is not canonical";
  if (b.v !== 1 || b.group_id !== groupId) return "it is not this group's";
  if (b.seq !== prev.seq + 1) return `it is seq ${b.seq}, not ${prev.seq + 1}`;
  if (b.prev_hash !== prev.hash) return "it does not follow the event before it";
  if (typeof b.deltas !== "object" || b.deltas === null || !sumsToZero(b.deltas)) return "its balance changes do not sum to zero";
  return null;
}

/** Checks a run of events after `prev`: the first that does not hold, with why; null when the whole run holds. */
export function verifyChain(groupId: string, events: readonly GroupEvent[], prev = { seq: 0, hash: GENESIS }): { seq: number; problem: string } | null {
  let at = prev;
  for (const e of events) {
    const problem = eventProblem(groupId, at, e);
    if (problem) return { seq: at.seq + 1, problem };
    at = { seq: at.seq + 1, hash: e.hash };
  }
  return null;
}
