// The one module that writes inbox items; every producer calls deliver() inside its own transaction.
import { and, asc, count, desc, eq, gt, inArray, isNull, type SQL, sql } from "drizzle-orm";
import {
  allAfterCommit,
  getAfterCommit,
  guard,
  isReadOnly,
  jsonEach,
  jsonList,
  prepared,
  preparedWrite,
  requireWrite,
  snapshotOf,
  type Tx,
  unseenFailure,
} from "../../db/client.ts";
import { contacts, groups, inboxCounts, inboxCursors, inboxItems, signinCodes } from "../../db/schema/index.ts";
import { DAY, iso, later } from "../clock.ts";
import { invalid } from "../errors.ts";
import type { DomainContext, Principal } from "../contract/principal.ts";
import type { InboxItem, InboxSummary, Untrusted } from "../contract/wire.ts";
import { refsByIds } from "./agents.ts";
import { paginate } from "../contract/cursor.ts";
import { INBOX_TYPES, type InboxType } from "../contract/inbox-types.ts";
import { readsSigninCodes } from "../auth/credentials.ts";
import { quoted } from "./untrusted.ts";
import { emailColumns, recordEmailEvents } from "./email/events.ts";

export const ITEM_LIFETIME_MS = 30 * DAY;
export const KEPT_LIFETIME_MS = 365 * DAY;
const TOP_ITEMS = 3;

/** A sign-in code for the human: whoever reads it can connect a new client to the handle. */
export const JOIN_CODE_ITEM = "auth.join_code" satisfies InboxType;

/** One item for one agent; its app, requires_action and suggested_tools come from INBOX_TYPES by its type. */
export interface Delivery {
  to: string;
  type: InboxType;
  from: string | null;
  summaryMd: string;
  payload?: Record<string, unknown>;
  note?: Untrusted | null;
  refs?: Record<string, string>;
  /** When the item stops being shown, if sooner than ITEM_LIFETIME_MS: an item about something short-lived ends with it. */
  expiresAt?: string;
}

/**
 * Leaves an item in an agent's inbox. Items from an agent the recipient blocked are dropped silently,
 * except ledger updates of groups they still share. Returns the item id, or null when dropped. A retired agent (a
 * placeholder, a handle joined into another, a deleted account: a former member the ledger still names) has no
 * inbox: its item is not stored, though an id is returned (no caller reads it for such a recipient).
 */
export async function deliver(tx: Tx, now: Date, d: Delivery): Promise<string | null> {
  return (await deliverAll(tx, now, [d]))[0] ?? null;
}

// The items of one delivery, one statement for all its recipients: rows as [item_id, agent_id, type, app,
// from_agent_id, summary_md, payload, note, refs, requires_action, suggested_tools, expires_at], JSON columns as their text. An
// item's insert runs the inbox's triggers and fills seven indexes: a remote primary prepares every statement anew,
// ~150 µs of its CPU for this one, so an expense told to many members costs it one, not one a member.
const insertItems = preparedWrite((tx) =>
  tx
    .insert(inboxItems)
    .select(
      sql`SELECT NULL, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10, ${sql.placeholder("createdAt")}, value ->> 11, 0, 0, 0, 0 FROM ${jsonEach("rows")} WHERE NOT EXISTS (SELECT 1 FROM agents WHERE agent_id = value ->> 1 AND retired_at IS NOT NULL)`,
    )
    .prepare(),
);

/** A JSON column's value as its text (null stays NULL). */
const json = (v: unknown) => (v === null ? null : JSON.stringify(v));

/** deliver() for many recipients at once (an expense may tell dozens of members). */
export async function deliverAll(tx: Tx, now: Date, ds: Delivery[]): Promise<(string | null)[]> {
  const ids: (string | null)[] = [];
  const rows: unknown[][] = [];
  const usual = later(now, ITEM_LIFETIME_MS);
  let mailed = false;
  for (const d of ds) {
    const { app, requiresAction, suggestedTools } = INBOX_TYPES[d.type];
    if (d.from && app !== "ledger" && (await hasBlocked(tx, d.to, d.from))) {
      ids.push(null);
      continue;
    }
    // Time-ordered: a new item's id lands at the end of the item_id index instead of on a random page of it.
    const itemId = Bun.randomUUIDv7();
    ids.push(itemId);
    rows.push([
      itemId,
      d.to,
      d.type,
      app,
      d.from,
      d.summaryMd,
      json(d.payload ?? {}),
      json(d.note ?? null),
      json(d.refs ?? {}),
      requiresAction ? 1 : 0,
      json(suggestedTools),
      d.expiresAt ?? usual,
      // The person behind the agent may hear of it by e-mail (email/events.ts reads these two; the insert does not).
      ...emailColumns(d.type),
    ]);
    mailed ||= rows.at(-1)!.length > 12;
  }
  if (!rows.length) return ids;
  const bound = { rows: jsonList(rows), createdAt: iso(now) };
  await insertItems(tx).run(bound);
  // In this transaction: an item and its e-mail are written together or not at all, and only here, once.
  if (mailed) await recordEmailEvents(tx, bound.rows, bound.createdAt);
  return ids;
}

const blockRow = prepared((tx) =>
  tx
    .select({ state: contacts.state })
    .from(contacts)
    .where(and(eq(contacts.ownerId, sql.placeholder("blocker")), eq(contacts.otherId, sql.placeholder("blocked")), eq(contacts.state, "blocked")))
    .prepare(),
);

export async function hasBlocked(tx: Tx, blocker: string, blocked: string): Promise<boolean> {
  // As the call read it: a call may write the pair's rows (a contact request) but never blocks and delivers at once.
  return (await blockRow(snapshotOf(tx)).get({ blocker, blocked })) !== undefined;
}

/**
 * Acting with a suggested tool resolves the items it answers: those of `type` whose refs contain all of `refs`,
 * in the inbox of one agent or of several at once.
 */
export async function resolveItems(tx: Tx, agentId: string | readonly string[], type: InboxType, refs: Record<string, string>): Promise<void> {
  await tx
    .update(inboxItems)
    .set({ resolved: true })
    .where(and(matching(agentId, type, refs), unresolved));
}

/**
 * Items whose cause was taken back (a withdrawn contact request) leave the inbox: not listed, not counted, in no
 * digest. The rows stay until they expire, so deliveredSince still counts them.
 */
export async function withdrawItems(tx: Tx, agentId: string, type: InboxType, refs: Record<string, string>): Promise<void> {
  await tx
    .update(inboxItems)
    .set({ dismissed: true })
    .where(and(matching(agentId, type, refs), notDismissed));
}

const deliveredCount = prepared((tx) =>
  tx
    .select({ n: sql<number>`count(*)` })
    .from(inboxItems)
    .where(
      and(
        eq(inboxItems.agentId, sql.placeholder("to")),
        eq(inboxItems.fromAgentId, sql.placeholder("from")),
        eq(inboxItems.type, sql.placeholder("type")),
        gt(inboxItems.createdAt, sql.placeholder("since")),
      ),
    )
    .prepare(),
);

/**
 * How many items of `type` one agent left in another's inbox since `since`, withdrawn or dismissed ones included.
 * Exact for any `since` within ITEM_LIFETIME_MS: no row is deleted before it expires.
 */
export async function deliveredSince(tx: Tx, to: string, from: string, type: InboxType, since: Date): Promise<number> {
  const row = await deliveredCount(tx).get({ to, from, type, since: iso(since) });
  return Number(row?.n ?? 0);
}

/** Items of `type` in the inbox of one agent or of several, whose refs contain all of `refs`. */
function matching(agentId: string | readonly string[], type: InboxType, refs: Record<string, string>) {
  const owners = typeof agentId === "string" ? eq(inboxItems.agentId, agentId) : inArray(inboxItems.agentId, [...agentId]);
  const conds = Object.entries(refs).map(([k, v]) => sql`json_extract(${inboxItems.refs}, ${"$." + k}) = ${v}`);
  return and(owners, eq(inboxItems.type, type), ...conds);
}

// Flags are compared with literals, never bound values: a bound value on a column of a partial index's condition
// makes SQLite prepare the statement again on every run (0012_inbox_counts.sql and 0015 have such indexes).
const notDismissed = sql`${inboxItems.dismissed} = 0`;
const unseen = sql`${inboxItems.seen} = 0`;
const unresolved = sql`${inboxItems.resolved} = 0`;

const agent = sql.placeholder("agent");
const at = sql.placeholder("now");

// Unary + keeps the planner off the expiry index for these reads: an agent's items are read in seq order by
// the index of the query, and expiry only filters them (by the range it would scan every live item instead).
const notExpired = (now: Date | typeof at) => sql`+${inboxItems.expiresAt} > ${now instanceof Date ? iso(now) : now}`;

const live = (agentId: string, now: Date) => and(eq(inboxItems.agentId, agentId), notDismissed, notExpired(now));

// The counters (kept by triggers, see 0012_inbox_counts.sql) less the counted items past expires_at that the
// expiry job has not deleted yet: a key lookup and an index range that is normally empty.
const expiredCount = (condition: SQL) =>
  sql<number>`(SELECT count(*) FROM inbox_items INDEXED BY inbox_agent_expiry WHERE agent_id = ${agent} AND expires_at <= ${at} AND ${condition})`;
const countsQuery = prepared((tx) =>
  tx
    .select({
      unread: sql<number>`${inboxCounts.unread} - ${expiredCount(sql`seen = 0 AND dismissed = 0`)}`,
      requires_action: sql<number>`${inboxCounts.requiresAction} - ${expiredCount(sql`requires_action = 1 AND resolved = 0 AND dismissed = 0`)}`,
    })
    .from(inboxCounts)
    .where(eq(inboxCounts.agentId, agent))
    .prepare(),
);

// The newest unread items of one partial index, named: without statistics the planner would rather walk all of
// an agent's items in seq order. Its condition is written out with literals so that the index applies.
const newestUnread = (from: SQL, condition: SQL) =>
  prepared((tx) =>
    tx
      // A column as plain SQL: drizzle does not see the table inside the FROM it is given as SQL.
      .select({ summaryMd: sql<string>`summary_md`, seq: sql<number>`seq` })
      .from(from)
      .where(and(eq(inboxItems.agentId, agent), condition, notExpired(at)))
      .orderBy(desc(inboxItems.seq))
      .limit(TOP_ITEMS)
      .prepare(),
  );

/** The type whose items collapse into one line per group in `top` and the digest. */
export const CONFIRMATION_ITEM = "ledger.expense_added" satisfies InboxType;

/**
 * How many of the newest unread asks the summary reads. It rides on every answer, so its work is bounded however
 * many wait (an agent that never reads its inbox may have thousands of expenses to confirm); a group's count that
 * may be short of what waits says "+".
 */
export const ASKS_READ = 25;

// The newest unread asks, newest first, from their partial index (each ask's group and its name, for expenses to
// confirm: a key lookup a row, and no second read for the names).
const newestAsks = prepared((tx) =>
  tx
    .select({
      summaryMd: sql<string>`summary_md`,
      seq: sql<number>`seq`,
      type: sql<string>`type`,
      groupId: sql<string | null>`json_extract(refs, '$.group_id')`,
      groupName: sql<string | null>`(SELECT name FROM ${groups} WHERE group_id = json_extract(refs, '$.group_id'))`,
    })
    .from(sql`${inboxItems} INDEXED BY inbox_pending_action`)
    .where(and(eq(inboxItems.agentId, agent), sql`seen = 0 AND requires_action = 1 AND resolved = 0 AND dismissed = 0`, notExpired(at)))
    .orderBy(desc(inboxItems.seq))
    .limit(sql.placeholder("limit"))
    .prepare(),
);

const waitsInGroup = <A extends { type: string; groupId: string | null }>(a: A): a is A & { groupId: string } =>
  a.type === CONFIRMATION_ITEM && a.groupId !== null;

/** "6 expenses in “Lisbon trip” (quoted) to confirm": one line for a group's expenses waiting for the agent. */
export const confirmationLine = (n: number, groupName: string | null, more = false) =>
  `${n}${more ? "+" : ""} expense${n === 1 && !more ? "" : "s"} in ${groupName === null ? "a group" : quoted(groupName, 40)} to confirm: respond_expense with expense_ids (get_inbox requires_action=true lists them).`;
const newestNews = newestUnread(sql`${inboxItems} INDEXED BY inbox_unread_news`, sql`seen = 0 AND dismissed = 0 AND requires_action = 0`);

export interface InboxCounts {
  unread: number;
  requires_action: number;
}

const countsOf = (row: InboxCounts | undefined): InboxCounts => ({ unread: row?.unread ?? 0, requires_action: row?.requires_action ?? 0 });

async function counts(tx: Tx, agentId: string, now: Date): Promise<InboxCounts> {
  return countsOf(await countsQuery(tx).get({ agent: agentId, now: iso(now) }));
}

type Ask = { summaryMd: string; seq: number; type: string; groupId: string | null; groupName: string | null };

/** Where the summary's top is read from: a transaction as it goes (summary), or rows read beforehand (summaryOnCommit). */
interface TopReads {
  asks(limit: number): Promise<Ask[]>;
  news(): Promise<{ summaryMd: string }[]>;
}

/**
 * What rides on every authenticated answer, in constant time: the counters, and as `top` the newest unread
 * items, asks waiting for a decision first. An ask already answered is never shown as one: it is left out of top.
 * In a write call it is read as the call's batch commits it, in the batch's own request (allAfterCommit): the counts, the widest window of asks and the news, in one go. Not awaited inside
 * the call: it settles once the batch has committed.
 */
export function summary({ tx, now, actor: { agentId } }: DomainContext): Promise<InboxSummary> {
  const args = { agent: agentId, now: iso(now) };
  if (isReadOnly(tx)) {
    return counts(tx, agentId, now).then((c) =>
      withTop(c, {
        asks: (limit) => newestAsks(tx).all({ ...args, limit }),
        news: () => newestNews(tx).all(args),
      }),
    );
  }
  const reads = [
    getAfterCommit(tx, countsQuery(tx), args),
    allAfterCommit(tx, newestAsks(tx), { ...args, limit: ASKS_READ }),
    allAfterCommit(tx, newestNews(tx), args),
  ] as const;
  return unseenFailure(
    Promise.all(reads).then(([row, asks, news]) => withTop(countsOf(row), { asks: async (limit) => asks.slice(0, limit), news: async () => news })),
  );
}

/** The summary of counts c, its top read through reads. */
async function withTop(c: InboxCounts, reads: TopReads): Promise<InboxSummary> {
  if (!c.unread) return { ...c, top: [] };
  // The few newest asks decide the top unless an expense to confirm is among them: only then is its group's count
  // needed, and the wider window read (each row read costs; this runs on every answer).
  let window = await reads.asks(TOP_ITEMS);
  if (window.length === TOP_ITEMS && window.some(waitsInGroup)) window = await reads.asks(ASKS_READ);
  // Expenses to confirm are summed up per group (newest first, as the window is); other asks stand alone.
  const byGroup = new Map<string, { n: number; seq: number; only: string; name: string | null }>();
  for (const a of window) {
    if (!waitsInGroup(a)) continue;
    const g = byGroup.get(a.groupId);
    if (g) g.n++;
    else byGroup.set(a.groupId, { n: 1, seq: Number(a.seq), only: a.summaryMd, name: a.groupName });
  }
  const shown = [...byGroup].slice(0, TOP_ITEMS);
  const more = window.length >= ASKS_READ;
  const asks = [
    ...window
      .filter((a) => !waitsInGroup(a))
      .slice(0, TOP_ITEMS)
      .map((a) => ({ line: firstLine(a.summaryMd), seq: Number(a.seq) })),
    ...shown.map(([, g]) => ({ line: g.n === 1 ? firstLine(g.only) : confirmationLine(g.n, g.name, more), seq: g.seq })),
  ].sort((a, b) => b.seq - a.seq);
  const news = asks.length < TOP_ITEMS ? (await reads.news()).map((t) => firstLine(t.summaryMd)) : [];
  return { ...c, top: [...asks.map((a) => a.line), ...news].slice(0, TOP_ITEMS) };
}

/**
 * An item's first line, for `top` and the digest: at most 160 characters, cut after its last whole sentence that
 * fits, else after a whole word (with …), so a line read to a human never stops mid-word or mid-warning.
 */
export const firstLine = (md: string) => {
  const line = md.split("\n")[0] ?? "";
  if (line.length <= 160) return line;
  let cut = line.slice(0, 159);
  // Never inside another agent's quoted text (untrusted.ts quoted): the rest of it would read as the summary's own.
  const open = cut.lastIndexOf("“");
  if (open >= 0 && !/^“[^“”]*” \(quoted\)/.test(cut.slice(open))) cut = cut.slice(0, open).trimEnd();
  const sentence = /^.*[.!?](?=\s)/.exec(line.slice(0, 160))?.[0];
  const closed = (t: string) => t.split("“").length === t.split("”").length;
  if (sentence && sentence.length <= cut.length && sentence.length >= 40 && closed(sentence)) return sentence;
  const word = cut.replace(/\s+\S*$/, "");
  return `${word.length >= 40 ? word : cut}…`;
};

type ItemRow = typeof inboxItems.$inferSelect;

async function toItems(tx: Tx, rows: ItemRow[]): Promise<InboxItem[]> {
  const senders = await refsByIds(
    tx,
    rows.flatMap((r) => (r.fromAgentId ? [r.fromAgentId] : [])),
  );
  return rows.map((r) => ({
    item_id: r.itemId,
    seq: r.seq,
    type: r.type,
    app: r.app,
    from: r.fromAgentId ? (senders.get(r.fromAgentId) ?? null) : null,
    summary_md: r.summaryMd,
    payload: r.payload,
    note: r.note ?? null,
    refs: r.refs,
    requires_action: r.requiresAction,
    created_at: r.createdAt,
    expires_at: r.expiresAt,
    seen: r.seen,
    resolved: r.resolved,
    suggested_tools: r.suggestedTools,
  }));
}

// A page of items after a cursor: the client's own (read inside the query, one statement fewer on the most frequent
// call) or a given one; every variant built and prepared once per connection.
const pageQuery = (fromCursor: boolean, includeSeen: boolean) =>
  prepared((tx) =>
    tx
      .select()
      .from(inboxItems)
      .where(
        and(
          eq(inboxItems.agentId, agent),
          notDismissed,
          notExpired(at),
          gt(
            inboxItems.seq,
            fromCursor
              ? sql`coalesce((select ${inboxCursors.seq} from ${inboxCursors} where ${inboxCursors.clientId} = ${sql.placeholder("client")}), 0)`
              : sql.placeholder("since"),
          ),
          includeSeen ? undefined : unseen,
        ),
      )
      .orderBy(asc(inboxItems.seq))
      .limit(sql.placeholder("limit"))
      .prepare(),
  );
// get_inbox requires_action=true: every item still waiting for a decision after `since`, seen or not.
const pendingPage = prepared((tx) =>
  tx
    .select()
    .from(inboxItems)
    .where(
      and(
        eq(inboxItems.agentId, agent),
        sql`requires_action = 1 AND resolved = 0 AND dismissed = 0`,
        notExpired(at),
        gt(inboxItems.seq, sql.placeholder("since")),
      ),
    )
    .orderBy(asc(inboxItems.seq))
    .limit(sql.placeholder("limit"))
    .prepare(),
);

const pageQueries = {
  cursor: { all: pageQuery(true, true), unseen: pageQuery(true, false) },
  since: { all: pageQuery(false, true), unseen: pageQuery(false, false) },
};

const markSeen = prepared((tx) =>
  tx
    .update(inboxItems)
    .set({ seen: true })
    .where(sql`${inboxItems.seq} IN (SELECT value FROM ${jsonEach("seqs")})`)
    .prepare(),
);
const moveCursor = prepared((tx) =>
  tx
    .insert(inboxCursors)
    .values({ clientId: sql.placeholder("client"), seq: sql.placeholder("seq") })
    .onConflictDoUpdate({ target: inboxCursors.clientId, set: { seq: sql`max(${inboxCursors.seq}, excluded.seq)` } })
    .prepare(),
);

export interface ListOptions {
  since?: string;
  include_seen?: boolean;
  limit?: number;
  /** Only what still waits for a decision, seen or not; marks nothing and moves no cursor. */
  requires_action?: boolean;
}

/**
 * Without `since`, continues from this client's own cursor, marks what it returns as seen (unless the client is
 * read-only: seen is the agent's, and a read-only client's reads must not hide items from the others) and moves the cursor;
 * with `since`, reads from that cursor and changes nothing. A poll that finds nothing new writes nothing; one
 * that must mark items asks for a write transaction (requireWrite).
 */
export async function list(ctx: DomainContext<Principal>, opts: ListOptions) {
  const { tx, now, actor } = ctx;
  const limit = opts.limit ?? 50;
  if (opts.requires_action) return listPending(ctx, opts, limit);
  const fromCursor = opts.since === undefined;
  const query = pageQueries[fromCursor ? "cursor" : "since"][opts.include_seen ? "all" : "unseen"](tx);
  const since = fromCursor ? 0 : Math.min(Number(opts.since), Number.MAX_SAFE_INTEGER);
  // A key replaced by rotate_api_key reads no further than the first sign-in code: the code would let a leaked key
  // connect a new client, and moving the client's cursor (shared with the new key) past it would hide it from both.
  const upToCode = <R extends { type: string }>(rows: R[]) => {
    const code = actor.graceUntil ? rows.findIndex((r) => r.type === JOIN_CODE_ITEM) : -1;
    return code >= 0 ? rows.slice(0, code) : rows;
  };
  // Without include_seen only unseen items are listed, and when the counters say none is unread there is none past
  // any cursor: the most frequent poll, nothing new, reads no page.
  const before = opts.include_seen && !fromCursor ? null : await counts(tx, actor.agentId, now);
  const { page, next_cursor } =
    !opts.include_seen && before?.unread === 0
      ? { page: [], next_cursor: null }
      : await paginate(
          limit,
          async (n) => upToCode(await query.all({ agent: actor.agentId, now: iso(now), client: actor.clientId, since, limit: n })),
          (last) => String(last.seq),
        );
  const last = page.at(-1);
  let marked = 0;
  // "Seen" is the agent's, shared by all its clients: a read-only credential (no svc:write) only moves its own cursor,
  // so what it reads stays unread and still reaches the agent's other clients' next poll.
  const marks = actor.scopes.has("svc:write");
  if (fromCursor && last) {
    requireWrite(tx);
    // Each item is new once for a client: a poll of the same client elsewhere at the same moment that moved the
    // cursor past these first makes this batch fail, and this poll runs again from the cursor it left.
    await guard(
      tx,
      "inbox cursor",
      sql`coalesce((SELECT ${inboxCursors.seq} FROM ${inboxCursors} WHERE ${inboxCursors.clientId} = ${actor.clientId}), 0) < ${page[0]!.seq}`,
    );
    const toMark = marks ? page.filter((r) => !r.seen).map((r) => r.seq) : [];
    if (toMark.length) await markSeen(tx).run({ seqs: jsonList(toMark) });
    marked = toMark.length;
    await moveCursor(tx).run({ client: actor.clientId, seq: last.seq });
  }
  const items = await withSigninCodes(tx, actor, await toItems(tx, page));
  // The counters as the marks leave them: each item marked was unread, and seen changes no count of asks.
  const c = before ? { ...before, unread: Math.max(0, before.unread - marked) } : await counts(tx, actor.agentId, now);
  return {
    items,
    digest_md: digest(items, c, fromCursor ? (marks ? marked : "read-only") : null, await groupNames(tx, items)),
    unread: c.unread,
    requires_action: c.requires_action,
    next_cursor,
  };
}

/**
 * Every item in the agent's inbox that get_inbox can still list (not dismissed, not expired), oldest first, as it
 * shows them; reads only. Sign-in codes are left out: whoever reads one may sign a browser in. For the account
 * export (account-export.ts), which no client reads through, so no cursor moves.
 */
export async function exportItems(tx: Tx, agentId: string, now: Date): Promise<InboxItem[]> {
  const rows = await tx
    .select()
    .from(inboxItems)
    .where(and(live(agentId, now), sql`${inboxItems.type} <> ${JOIN_CODE_ITEM}`))
    .orderBy(asc(inboxItems.seq));
  return toItems(tx, rows);
}

/** get_inbox requires_action=true: a page of what waits for a decision; reads only. */
async function listPending({ tx, now, actor }: DomainContext<Principal>, opts: ListOptions, limit: number) {
  const since = opts.since === undefined ? 0 : Math.min(Number(opts.since), Number.MAX_SAFE_INTEGER);
  const { page, next_cursor } = await paginate(
    limit,
    (n) => pendingPage(tx).all({ agent: actor.agentId, now: iso(now), since, limit: n }),
    (last) => String(last.seq),
  );
  const items = await withSigninCodes(tx, actor, await toItems(tx, page));
  const c = await counts(tx, actor.agentId, now);
  const head = `${items.length} item${items.length === 1 ? "" : "s"} waiting for a decision${next_cursor ? " on this page" : ""}, none marked seen; ${c.unread} unread.`;
  return {
    items,
    digest_md: [head, ...digestLines(items, await groupNames(tx, items))].join("\n"),
    unread: c.unread,
    requires_action: c.requires_action,
    next_cursor,
  };
}

/** The names of the groups whose expenses wait for confirmation among `items`, for the digest's lines. */
const groupNames = (tx: Tx, items: InboxItem[]) => groupNamesOf(tx, [...new Set(items.filter(waitsForConfirmation).map((i) => i.refs.group_id!))]);

/** The names of a few groups by id. */
async function groupNamesOf(tx: Tx, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await tx.select({ id: groups.groupId, name: groups.name }).from(groups).where(inArray(groups.groupId, ids));
  return new Map(rows.map((r) => [r.id, r.name]));
}

const waitsForConfirmation = (i: InboxItem) => i.type === CONFIRMATION_ITEM && i.requires_action && !i.resolved && i.refs.group_id !== undefined;

/**
 * A sign-in code connects a browser to the handle, so only a credential that could connect a client itself reads one:
 * an API key that can write (readsSigninCodes). Others see that a code was sent, not the code. The first client to
 * read a live code is remembered: a browser signed in with it is obtained through that client and ends with it.
 */
async function withSigninCodes(tx: Tx, actor: Principal, items: InboxItem[]): Promise<InboxItem[]> {
  const codes = items.filter((i) => i.type === JOIN_CODE_ITEM);
  if (!codes.length) return items;
  if (!readsSigninCodes(actor)) {
    return items.map((i) =>
      i.type === JOIN_CODE_ITEM
        ? {
            ...i,
            summary_md:
              "A sign-in code was requested on the web. This credential cannot read sign-in codes (only an API key that may write can); the human can sign in another way.",
            payload: { ...i.payload, code: null },
          }
        : i,
    );
  }
  const unread = codes.flatMap((i) => (!i.resolved && i.refs.code_id ? [i.refs.code_id] : []));
  if (unread.length) {
    requireWrite(tx);
    await tx
      .update(signinCodes)
      .set({ readByClientId: actor.clientId })
      .where(and(sql`${signinCodes.codeId} IN (SELECT value FROM json_each(${jsonList(unread)}))`, isNull(signinCodes.readByClientId)));
  }
  return items;
}

/** An operator's read-only view (svc inbox inspect): the newest live items, seen or not; marks nothing, moves no cursor. */
export async function inspect(ctx: DomainContext, limit: number) {
  const { tx, now, actor } = ctx;
  const rows = await tx.select().from(inboxItems).where(live(actor.agentId, now)).orderBy(desc(inboxItems.seq)).limit(limit);
  return { ...(await summary(ctx)), items: await toItems(tx, rows) };
}

/**
 * A few lines to read to the human, about the same moment as the counts beside them (after this call's marks);
 * other agents' words stay inside the items' untrusted fields. `marked`: how many this call marked seen, null when
 * it marks nothing (a read with since), "read-only" when it continued from the cursor but may not mark.
 */
function digest(items: InboxItem[], c: InboxCounts, marked: number | null | "read-only", names: Map<string, string>): string {
  const n = `${items.length} item${items.length === 1 ? "" : "s"}`;
  const waiting = `${c.requires_action} waiting for a decision`;
  const head =
    marked === null
      ? `${n} from the cursor, none marked seen; ${c.unread} unread, ${waiting}.`
      : items.length === 0
        ? `Nothing new in the inbox; ${waiting}.`
        : marked === "read-only"
          ? `${items.length} new item${items.length === 1 ? "" : "s"} for this read-only credential, left unread for your other apps; ${c.unread} unread, ${waiting}.`
          : `${items.length} new item${items.length === 1 ? "" : "s"}, now marked seen; ${c.unread} still unread, ${waiting}.`;
  return [head, ...digestLines(items, names)].join("\n");
}

/**
 * One line per item, except expenses waiting for confirmation: one line per group, where the group's first one
 * was (its item ids stay in `items`, and respond_expense takes them all as expense_ids).
 */
function digestLines(items: InboxItem[], names: Map<string, string>): string[] {
  const perGroup = Map.groupBy(items.filter(waitsForConfirmation), (i) => i.refs.group_id!);
  const lines: string[] = [];
  for (const i of items) {
    const group = waitsForConfirmation(i) ? perGroup.get(i.refs.group_id!)! : null;
    if (group && group.length > 1) {
      if (group[0] === i) lines.push(`- ${confirmationLine(group.length, names.get(i.refs.group_id!) ?? null)} (needs a decision)`);
      continue;
    }
    lines.push(`- ${firstLine(i.summary_md)}${!i.requires_action ? "" : i.resolved ? " (already answered)" : " (needs a decision)"}`);
  }
  if (lines.length > 10) return [...lines.slice(0, 10), `- and ${lines.length - 10} more`];
  return lines;
}

export type AckAction = "seen" | "resolved" | "dismiss" | "keep";

export async function ack({ tx, now, actor: { agentId } }: DomainContext, itemIds: string[], action: AckAction): Promise<number> {
  const mine = and(eq(inboxItems.agentId, agentId), inArray(inboxItems.itemId, [...new Set(itemIds)]));
  if (action === "keep") {
    const others = await tx
      .select({ itemId: inboxItems.itemId, type: inboxItems.type })
      .from(inboxItems)
      .where(and(mine, sql`${inboxItems.type} <> 'mail.envelope'`));
    if (others.length) invalidKeep(others.map((o) => o.itemId));
  }
  const set: Partial<ItemRow> =
    action === "seen"
      ? { seen: true }
      : action === "resolved"
        ? { resolved: true, seen: true }
        : action === "dismiss"
          ? { dismissed: true }
          : { kept: true, seen: true, expiresAt: later(now, KEPT_LIFETIME_MS) };
  const n = (await tx.select({ n: count() }).from(inboxItems).where(mine).get())?.n ?? 0;
  if (n) await tx.update(inboxItems).set(set).where(mine);
  return n;
}

function invalidKeep(ids: string[]): never {
  throw invalid("item_ids", `keep applies to mail.envelope items only; not envelopes: ${ids.join(", ")}`);
}

/** The most the pages count of what a person has not seen: beyond it the nav says "99+". */
export const UNSEEN_SHOWN = 99;

// What a person has not seen yet, as the pages' nav counts it: live unseen items, but for sign-in codes (a page
// never shows one) and asks already answered (nothing is left to do), up to UNSEEN_SHOWN + 1 rows of the index.
const unseenForPeople = prepared((tx) =>
  tx
    .select({ n: sql<number>`count(*)` })
    .from(
      sql`(SELECT 1 FROM ${inboxItems} INDEXED BY inbox_unseen WHERE agent_id = ${agent} AND seen = 0 AND dismissed = 0 AND expires_at > ${at}
        AND type <> ${JOIN_CODE_ITEM} AND NOT (requires_action = 1 AND resolved = 1) LIMIT ${UNSEEN_SHOWN + 1})`,
    )
    .prepare(),
);

/** How many items a person has not seen (the pages' nav), at most UNSEEN_SHOWN + 1. */
export async function unseenCount(tx: Tx, agentId: string, now: Date): Promise<number> {
  return (await unseenForPeople(tx).get({ agent: agentId, now: iso(now) }))?.n ?? 0;
}
