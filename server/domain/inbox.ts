// The one module that writes inbox items; every producer calls deliver() inside its own transaction.
import { and, asc, desc, eq, gt, inArray, sql } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { contacts, inboxCursors, inboxItems } from "../../db/schema/index.ts";
import { DAY, iso, later } from "../clock.ts";
import { invalid } from "../errors.ts";
import type { Principal } from "../tools/define.ts";
import type { InboxItem, InboxSummary, Untrusted } from "../tools/schemas.ts";
import { refsByIds } from "./agents.ts";

export const ITEM_LIFETIME_MS = 30 * DAY;
export const KEPT_LIFETIME_MS = 365 * DAY;
const TOP_ITEMS = 3;

export type App = "network" | "mail" | "ledger" | "plans";

export interface Delivery {
  to: string;
  type: string;
  app: App;
  from: string | null;
  summaryMd: string;
  payload?: Record<string, unknown>;
  note?: Untrusted | null;
  refs?: Record<string, string>;
  requiresAction?: boolean;
  suggestedTools?: string[];
}

/**
 * Leaves an item in an agent's inbox. Items from an agent the recipient blocked are dropped silently,
 * except ledger updates of groups they still share. Returns the item id, or null when dropped.
 */
export async function deliver(tx: Tx, now: Date, d: Delivery): Promise<string | null> {
  return (await deliverAll(tx, now, [d]))[0] ?? null;
}

/** deliver() for many recipients at once, in one insert (an expense may tell dozens of members). */
export async function deliverAll(tx: Tx, now: Date, ds: Delivery[]): Promise<(string | null)[]> {
  const ids: (string | null)[] = [];
  const rows: (typeof inboxItems.$inferInsert)[] = [];
  for (const d of ds) {
    if (d.from && d.app !== "ledger" && (await hasBlocked(tx, d.to, d.from))) {
      ids.push(null);
      continue;
    }
    // Time-ordered: a new item's id lands at the end of the item_id index instead of on a random page of it.
    const itemId = Bun.randomUUIDv7();
    ids.push(itemId);
    rows.push({
      itemId,
      agentId: d.to,
      type: d.type,
      app: d.app,
      fromAgentId: d.from,
      summaryMd: d.summaryMd,
      payload: d.payload ?? {},
      note: d.note ?? null,
      refs: d.refs ?? {},
      requiresAction: d.requiresAction ?? false,
      suggestedTools: d.suggestedTools ?? [],
      createdAt: iso(now),
      expiresAt: later(now, ITEM_LIFETIME_MS),
    });
  }
  if (rows.length) await tx.insert(inboxItems).values(rows);
  return ids;
}

export async function hasBlocked(tx: Tx, blocker: string, blocked: string): Promise<boolean> {
  const row = await tx
    .select({ state: contacts.state })
    .from(contacts)
    .where(and(eq(contacts.ownerId, blocker), eq(contacts.otherId, blocked), eq(contacts.state, "blocked")))
    .get();
  return row !== undefined;
}

/**
 * Acting with a suggested tool resolves the items it answers: those of `type` whose refs contain all of `refs`,
 * in the inbox of one agent or of several at once.
 */
export async function resolveItems(tx: Tx, agentId: string | readonly string[], type: string, refs: Record<string, string>): Promise<void> {
  const owners = typeof agentId === "string" ? eq(inboxItems.agentId, agentId) : inArray(inboxItems.agentId, [...agentId]);
  const conds = Object.entries(refs).map(([k, v]) => sql`json_extract(${inboxItems.refs}, ${"$." + k}) = ${v}`);
  await tx
    .update(inboxItems)
    .set({ resolved: true })
    .where(and(owners, eq(inboxItems.type, type), eq(inboxItems.resolved, false), ...conds));
}

const live = (agentId: string, now: Date) =>
  and(eq(inboxItems.agentId, agentId), eq(inboxItems.dismissed, false), gt(inboxItems.expiresAt, iso(now)));

const TOP_CANDIDATES = 20;

/** Counts from two index ranges; `top` is the newest unread, those waiting for a decision first. */
export async function summary(tx: Tx, agentId: string, now: Date): Promise<InboxSummary> {
  const { unread, requires_action } = await counts(tx, agentId, now);
  const recent = unread
    ? await tx
        .select({ summaryMd: inboxItems.summaryMd, pending: sql<number>`${inboxItems.requiresAction} and not ${inboxItems.resolved}` })
        .from(inboxItems)
        .where(and(live(agentId, now), eq(inboxItems.seen, false)))
        .orderBy(desc(inboxItems.seq))
        .limit(TOP_CANDIDATES)
    : [];
  const top = [...recent.filter((r) => Number(r.pending)), ...recent.filter((r) => !Number(r.pending))].slice(0, TOP_ITEMS);
  return { unread, requires_action, top: top.map((t) => firstLine(t.summaryMd)) };
}

async function counts(tx: Tx, agentId: string, now: Date): Promise<{ unread: number; requires_action: number }> {
  const at = iso(now);
  const row = await tx.get<{ unread: number; requires_action: number }>(sql`
    SELECT
      (SELECT count(*) FROM inbox_items INDEXED BY inbox_unseen
        WHERE agent_id = ${agentId} AND seen = 0 AND dismissed = 0 AND expires_at > ${at}) AS unread,
      (SELECT count(*) FROM inbox_items INDEXED BY inbox_pending_action
        WHERE agent_id = ${agentId} AND requires_action = 1 AND resolved = 0 AND dismissed = 0 AND expires_at > ${at}) AS requires_action`);
  return { unread: Number(row?.unread ?? 0), requires_action: Number(row?.requires_action ?? 0) };
}

const firstLine = (md: string) => {
  const line = md.split("\n")[0] ?? "";
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
};

type ItemRow = typeof inboxItems.$inferSelect;

async function toItems(tx: Tx, rows: ItemRow[]): Promise<InboxItem[]> {
  const senders = await refsByIds(tx, rows.flatMap((r) => (r.fromAgentId ? [r.fromAgentId] : [])));
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

export interface ListOptions {
  since?: string;
  include_seen?: boolean;
  limit?: number;
}

/**
 * Without `since`, continues from this client's own cursor, marks what it returns as seen and moves the cursor;
 * with `since`, reads from that cursor and changes nothing.
 */
export async function list(tx: Tx, p: Principal, now: Date, opts: ListOptions) {
  const limit = opts.limit ?? 50;
  const fromCursor = opts.since === undefined;
  // The client's cursor is read inside the items query: one statement fewer on the most frequent call.
  const base = fromCursor
    ? sql`coalesce((select ${inboxCursors.seq} from ${inboxCursors} where ${inboxCursors.clientId} = ${p.clientId}), 0)`
    : Math.min(Number(opts.since), Number.MAX_SAFE_INTEGER);
  const rows = await tx
    .select()
    .from(inboxItems)
    .where(and(live(p.agentId, now), gt(inboxItems.seq, base), opts.include_seen ? undefined : eq(inboxItems.seen, false)))
    .orderBy(asc(inboxItems.seq))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  if (fromCursor && last) {
    const unseen = page.filter((r) => !r.seen).map((r) => r.seq);
    if (unseen.length) await tx.update(inboxItems).set({ seen: true }).where(inArray(inboxItems.seq, unseen));
    await tx
      .insert(inboxCursors)
      .values({ clientId: p.clientId, seq: last.seq })
      .onConflictDoUpdate({ target: inboxCursors.clientId, set: { seq: last.seq } });
  }
  const items = await toItems(tx, page);
  const c = await counts(tx, p.agentId, now);
  return {
    items,
    digest_md: digest(items, c),
    unread: c.unread,
    requires_action: c.requires_action,
    next_cursor: rows.length > limit && last ? String(last.seq) : null,
  };
}

/** An operator's read-only view (svc inbox inspect): the newest live items, seen or not; marks nothing, moves no cursor. */
export async function inspect(tx: Tx, agentId: string, now: Date, limit: number) {
  const rows = await tx.select().from(inboxItems).where(live(agentId, now)).orderBy(desc(inboxItems.seq)).limit(limit);
  return { ...(await summary(tx, agentId, now)), items: await toItems(tx, rows) };
}

/** A few lines to read to the human; other agents' words stay inside the items' untrusted fields. */
function digest(items: InboxItem[], c: { unread: number; requires_action: number }): string {
  const head =
    items.length === 0
      ? "Nothing new in the inbox."
      : `${items.length} new item${items.length === 1 ? "" : "s"}; ${c.unread} unread, ${c.requires_action} waiting for a decision.`;
  const lines = items.slice(0, 10).map((i) => `- ${firstLine(i.summary_md)}${i.requires_action && !i.resolved ? " (needs a decision)" : ""}`);
  if (items.length > 10) lines.push(`- and ${items.length - 10} more`);
  return [head, ...lines].join("\n");
}

export type AckAction = "seen" | "resolved" | "dismiss" | "keep";

export async function ack(tx: Tx, agentId: string, itemIds: string[], action: AckAction, now: Date): Promise<number> {
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
  const res = await tx.update(inboxItems).set(set).where(mine);
  return res.rowsAffected;
}

function invalidKeep(ids: string[]): never {
  throw invalid("item_ids", `keep applies to mail.envelope items only; not envelopes: ${ids.join(", ")}`);
}
