// Ledger answers as sentences for people (the group pages, `svc call` on a terminal), from the wire shapes' own
// text fields, so a client never has to know a currency's decimals to say them.

const unsigned = (text: string) => text.replace(/^[+-]/, "");

/** Who a ref names, for people: its handle, or for a placeholder member (its handle is its id) its name. */
export const whoIs = (r: { handle: string; agent_id?: string; display_name?: string }) =>
  r.agent_id !== undefined && r.handle === r.agent_id ? `${r.display_name ?? "someone"} (no account yet)` : r.handle;

type Ref = { handle: string; agent_id?: string; display_name?: string };

/** A member's group balance: "alice is owed 37.50 EUR", "bob owes 37.50 EUR", "carol is settled up". */
export function balanceSentence(handle: string, m: { balance_minor: number; balance: string }): string {
  if (m.balance_minor > 0) return `${handle} is owed ${unsigned(m.balance)}`;
  if (m.balance_minor < 0) return `${handle} owes ${unsigned(m.balance)}`;
  return `${handle} is settled up`;
}

/** How a sentence names someone: whoIs by default; the pages name people by their display names. */
type Who = (r: Ref) => string;

/** One settle-up transfer: "bob owes alice 37.50 EUR". */
export const transferSentence = (t: { from: Ref; to: Ref; amount: string }, currency: string, who: Who = whoIs) =>
  `${who(t.from)} owes ${who(t.to)} ${t.amount} ${currency}`;

/** The caller's net with a counterparty (positive: they owe the caller): "bob owes you 12.50 EUR", "you owe carol 3.00 EUR". */
export function counterpartySentence(c: { agent: Ref; balance_minor: number; balance: string }, name: Who = whoIs): string {
  const who = name(c.agent);
  if (c.balance_minor > 0) return `${who} owes you ${unsigned(c.balance)}`;
  if (c.balance_minor < 0) return `you owe ${who} ${unsigned(c.balance)}`;
  return `you and ${who} are settled up`;
}

/** A payment: "bob paid alice 20.00 EUR", and what it waits for while pending. */
export function paymentSentence(p: { from: Ref; to: Ref; amount: string; currency: string; state: string }, who: Who = whoIs): string {
  const paid = `${who(p.from)} paid ${who(p.to)} ${p.amount} ${p.currency}`;
  if (p.state === "pending") return `${paid}: waiting for ${who(p.to)} to confirm`;
  return p.state === "confirmed" ? paid : `${paid} (${p.state})`;
}

/** Before an expense's description in a sentence: "refund " for a refund, nothing for an expense. */
export const kindWord = (kind: string) => (kind === "refund" ? "refund " : "");

/** What a settle-up plan is, by get_balances' settle_up_method. */
export const SETTLE_UP_NOTE: Record<string, string> = {
  exact: "the fewest transfers that settle the group",
  greedy: "transfers that settle the group (too many members to search for the fewest; perhaps a few more)",
  pairwise: "each pair's own debts (the group does not simplify debts)",
};

/** The note for a get_balances answer: a greedy plan proven minimal is the fewest transfers all the same. */
export const settleUpNote = (d: { settle_up_method?: string; proven_minimal?: boolean }) =>
  SETTLE_UP_NOTE[d.settle_up_method === "greedy" && d.proven_minimal ? "exact" : (d.settle_up_method ?? "")] ?? "";
