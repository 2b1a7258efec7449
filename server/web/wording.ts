// The words of the pages a person reads, in one place: people by their names, money as "you owe" or "you lent",
// times in the reader's own time zone, counts that agree, amounts typed the way the person writes them, errors a
// person can act on, and what an inbox item or a group's activity entry says. Agents keep their own wording (the
// tools' messages, the inbox items' summary_md, the activity log's summary_md): nothing here reaches an agent, and
// no page shows those texts as they are.
import { INBOX_TYPES } from "../contract/inbox-types.ts";
import type { AgentRef, InboxItem } from "../contract/wire.ts";
import type { AppError } from "../errors.ts";
import { formatAmount } from "../domain/ledger/money/amounts.ts";
import { TOOLS } from "../tools/catalogue.ts";
import { html, type Markup } from "./html.ts";

// ---- Counts ------------------------------------------------------------------------------------------------------

/** "1 share", "2 shares", "0 expenses". */
export const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "Alice", "Alice and Bob", "Alice, Bob and Carol". */
export function list(items: string[]): string {
  if (items.length <= 1) return items[0] ?? "";
  return `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

// ---- People ------------------------------------------------------------------------------------------------------

/** Someone as the wire names them: a ref, or a member of an expense (a handle, a placeholder's id as its handle). */
export type Person = { handle: string; agent_id?: string; display_name?: string };

/** A placeholder member (a friend added by name, no account yet): its handle is its id. */
export const isPlaceholder = (r: Person) => r.agent_id !== undefined && r.handle === r.agent_id;

const displayOf = (r: Person) => r.display_name?.trim() || r.handle;

/** A person with their handle after their name, where people are told apart: "Alice (@alice)". */
export const nameWithHandle = (r: Person) =>
  isPlaceholder(r) ? `${displayOf(r)} (no account yet)` : displayOf(r) === r.handle ? `@${r.handle}` : `${displayOf(r)} (@${r.handle})`;

/**
 * The names of the people a page speaks of: each by their display name (a handle only for someone who has none),
 * a friend without an account with "(no account yet)", and two people who share a display name told apart by
 * their handles. Someone the page does not know is named by the handle it has.
 */
export class Names {
  private readonly byHandle = new Map<string, Person>();
  private readonly shared = new Set<string>();

  constructor(people: Iterable<Person | null | undefined>) {
    for (const p of people) if (p) this.byHandle.set(p.handle, p);
    const seen = new Map<string, string>();
    for (const p of this.byHandle.values()) {
      const key = displayOf(p).toLocaleLowerCase();
      const other = seen.get(key);
      if (other !== undefined && other !== p.handle) this.shared.add(key);
      seen.set(key, p.handle);
    }
  }

  /** Another list of names with these people and more. */
  with(people: Iterable<Person | null | undefined>): Names {
    return new Names([...this.byHandle.values(), ...people]);
  }

  /** The person of a ref or of a handle, by name. */
  of(who: Person | string): string {
    const p = typeof who === "string" ? (this.byHandle.get(who) ?? { handle: who }) : (this.byHandle.get(who.handle) ?? who);
    if (isPlaceholder(p)) return `${displayOf(p)} (no account yet)`;
    return this.shared.has(displayOf(p).toLocaleLowerCase()) ? `${displayOf(p)} (@${p.handle})` : displayOf(p);
  }

  /** Like `of`, but a placeholder by its name alone (in a sentence that says the rest). */
  short(who: Person | string): string {
    const p = typeof who === "string" ? (this.byHandle.get(who) ?? { handle: who }) : (this.byHandle.get(who.handle) ?? who);
    return isPlaceholder(p) ? displayOf(p) : this.of(p);
  }

  /** The ref this page knows for a handle. */
  ref(handle: string): Person | undefined {
    return this.byHandle.get(handle);
  }
}

/** A group's members as refs (a placeholder as a ref whose handle is its member_id). */
export const memberRefs = (members: { agent: AgentRef | null; member_id: string; name: string }[]): Person[] =>
  members.map((m) => m.agent ?? { handle: m.member_id, agent_id: m.member_id, display_name: m.name });

// ---- Money -------------------------------------------------------------------------------------------------------

type MinorAmount = { handle: string; amount_minor: number };

/**
 * What an expense means for the reader, in minor units: positive, they lent it (paid more than their share);
 * negative, they owe it; null, they are not in it. A refund moves money the other way: who received it owes it.
 */
export function myNet(e: { kind?: string; paid_by: MinorAmount[]; shares: MinorAmount[] }, me: string): number | null {
  const paid = e.paid_by.filter((p) => p.handle === me).reduce((t, p) => t + p.amount_minor, 0);
  const share = e.shares.filter((s) => s.handle === me).reduce((t, s) => t + s.amount_minor, 0);
  if (!e.paid_by.some((p) => p.handle === me) && !e.shares.some((s) => s.handle === me)) return null;
  return e.kind === "refund" ? share - paid : paid - share;
}

/** "you lent 40.00 EUR", "you owe 20.00 EUR", "you are even on it", "you are not in it". */
export function youLine(net: number | null, amount: (minor: number) => string, refund = false): string {
  if (net === null) return "you are not in it";
  if (net > 0) return refund ? `you get ${amount(net)} back` : `you lent ${amount(net)}`;
  if (net < 0) return `you owe ${amount(-net)}`;
  return "you are even on it";
}

/**
 * An amount as the person typed it, the way the tools read it: "12,50", "1.234,50", "1 234,50" and "1,234.50" are
 * 12.50, 1234.50, 1234.50 and 1234.50. One separator followed by exactly three digits ("1,234", "1.234") is read as
 * the person's locale writes numbers (`decimalComma`: 1,5 for one and a half). Anything else is returned as typed
 * (trimmed), for the tool to refuse beside its field.
 */
export function typedAmount(typed: string, decimalComma: boolean): string {
  const trimmed = typed.trim();
  // Spaces (also the narrow no-break one) and apostrophes only ever group digits.
  const text = trimmed.replace(/[\s\u00a0\u202f']/g, "");
  const m = /^([+-]?)(\d[\d.,]*\d|\d)$/.exec(text) ?? /^([+-]?)([.,]\d+)$/.exec(text);
  if (!m) return trimmed;
  const [, sign, body] = m as unknown as [string, string, string];
  const commas = body.split(",").length - 1;
  const dots = body.split(".").length - 1;
  let decimal: "," | "." | null;
  if (commas && dots) decimal = body.lastIndexOf(",") > body.lastIndexOf(".") ? "," : ".";
  else if (!commas && !dots) return `${sign}${body}`;
  else {
    const sep = commas ? "," : ".";
    const digitsAfter = body.length - body.lastIndexOf(sep) - 1;
    if (commas + dots > 1) decimal = null;
    else if (digitsAfter !== 3) decimal = sep;
    else decimal = (sep === ",") === decimalComma ? sep : null;
  }
  const [whole, fraction, ...more] = decimal ? body.split(decimal) : [body];
  if (more.length) return trimmed;
  const group = decimal === "," ? "." : decimal === "." ? "," : commas ? "," : ".";
  // Grouped digits are in threes after the first group.
  if (whole!.includes(group) && !new RegExp(`^\\d{1,3}(\\${group}\\d{3})+$`).test(whole!)) return trimmed;
  if (fraction !== undefined && !/^\d+$/.test(fraction)) return trimmed;
  const digits = whole!.replaceAll(group, "") || "0";
  return `${sign}${digits}${fraction === undefined ? "" : `.${fraction}`}`;
}

/** Whether the person's first language (Accept-Language) writes one and a half as 1,5. */
export function decimalCommaOf(req: Request): boolean {
  const tag = (req.headers.get("accept-language") ?? "").split(",")[0]!.split(";")[0]!.trim();
  if (!tag || tag === "*") return false;
  try {
    return new Intl.NumberFormat(tag).formatToParts(1.5).find((p) => p.type === "decimal")?.value === ",";
  } catch {
    return false;
  }
}

// ---- Errors ------------------------------------------------------------------------------------------------------

const TOOL_NAMES = new Set(TOOLS.map((t) => t.name));
/** Words that are the tools' and the wire's, not a person's: a tool's name, a field name, "details", a schema's words. */
const MACHINE =
  /\b[a-z]+(?:_[a-z]+)+\b|\bdetails\.|\bexpected (?:string|array|number|object|boolean)\b|\breceived (?:undefined|null)\b|[<>]=|\bschema\b|\bcursor\b/;

/** Whether a text is for an agent rather than a person (names a tool, a field or a schema's words). */
export function speaksToAgents(text: string): boolean {
  if (MACHINE.test(text)) return true;
  for (const word of text.match(/\b[a-z]+_[a-z_]+\b/g) ?? []) if (TOOL_NAMES.has(word)) return true;
  return /\byour (?:human|agent)\b/i.test(text);
}

const sentence = (text: string) => {
  const t = text.trim().replace(/\s+/g, " ");
  return t ? `${t.charAt(0).toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? "" : "."}` : t;
};

/**
 * What a tool said of one field, as a person can act on it: a schema's words ("Too small: expected array to have
 * >=1 items") become a plain sentence; the domain's own sentences stay, unless they speak of tools or fields.
 */
export function issueText(path: string, message: string): string {
  const field = path.split(/[.[]/)[0] ?? "";
  const tooLong = message.match(/^Too big: expected string to have <=(\d+) characters?/);
  if (tooLong) return `Too long: at most ${tooLong[1]} characters.`;
  const tooMany = message.match(/^Too big: expected array to have <=(\d+) items?/);
  if (tooMany) return `Too many: at most ${tooMany[1]}.`;
  if (/^Too small: expected array to have >=1 items?/.test(message)) {
    if (path === "split.among" || field === "split") return "Choose at least one person to share it: tick them, or give them a value.";
    if (field === "paid_by") return "Choose who paid.";
    return "Choose at least one.";
  }
  if (/^Too small: expected string to have >=1 characters?/.test(message) || /^Invalid input: expected \w+, received undefined/.test(message))
    return "Fill this in.";
  const atLeast = message.match(/^Too small: expected number to be >=?(\S+)/);
  if (atLeast) return `At least ${atLeast[1]}.`;
  const atMost = message.match(/^Too big: expected number to be <=?(\S+)/);
  if (atMost) return `At most ${atMost[1]}.`;
  if (/^Invalid option/.test(message)) return "Choose one of the options.";
  if (/give exactly one of handle and member_id/.test(message)) return "Choose a person.";
  if (/^Invalid (input|string|format)/.test(message))
    return field === "amount" || field === "paid_by" ? "Type an amount such as 12.50 or 12,50." : "This is not a value that can be used here.";
  const plain = forPeople(message);
  if (speaksToAgents(plain)) return "This value cannot be used here.";
  return sentence(plain);
}

/** The labels of the pages' form fields, for an error about a field the page does not show beside an input. */
const FIELD_LABELS: Record<string, string> = {
  amount: "Amount",
  amount_minor: "Amount",
  description: "Description",
  currency: "Currency",
  exchange_rate: "Exchange rate",
  date: "Date",
  category: "Category",
  kind: "Kind",
  paid_by: "Paid by",
  split: "Split",
  repeat: "Repeat",
  repeat_until: "Repeat until",
  notes: "Notes",
  note: "Note",
  name: "Name",
  handle: "Handle",
  code: "Contact code",
  address: "Address",
  to: "To",
  from: "Paid by",
  to_member_id: "Paid to",
  from_member_id: "Paid by",
  subject: "Subject",
  body_md: "Message",
  reason: "Reason",
  response: "Your answer",
};

/**
 * What a page says of a refused form, above it: a person's words, never a tool's name, a field's path or a schema's
 * words. A refused value is said field by field (each also shown beside its input where the page has one); any
 * other refusal keeps the sentences of the server's message that speak to a person, else says what it means.
 */
export function errorText(err: Pick<AppError, "code" | "message" | "details">, names?: Names): string {
  if (err.code === "VALIDATION_ERROR") {
    const issues = ((err.details as { issues?: { path: string; message: string }[] } | undefined)?.issues ?? []).slice(0, 6);
    if (!issues.length) return "Some of what you typed cannot be used. Check the form and try again.";
    // Each issue with its field's label; one about the form as a whole ("(arguments)") on its own.
    const label = (path: string) => (path.startsWith("(") ? "" : `${FIELD_LABELS[path.split(/[.[]/)[0] ?? ""] ?? "One value"}: `);
    const said = [...new Set(issues.map((i) => `${label(i.path)}${issueText(i.path, i.message)}`))];
    return `Some of what you typed needs a change. ${said.join(" ")}`;
  }
  const kept = forPeople(err.message, names)
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter((s) => s && !speaksToAgents(s) && !/^Invalid arguments\b/.test(s));
  if (kept.length) return kept.join(" ");
  return FALLBACK[err.code] ?? "This could not be done. Reload the page and try again.";
}

/** A sentence of the server's without its asides for agents: "(payment_id ...)", "(record_payment)", "(quoted)". */
export const withoutAgentAsides = (text: string) =>
  text.replace(/\s*\(([^()]*)\)/g, (all, inner: string) => (speaksToAgents(inner) ? "" : all)).replace(/” \(quoted\)/g, "”");

/**
 * A message of the server's for a person: its asides for agents left out, people by their names where the page
 * knows them (else by their @handle), a missing agent said as a missing handle.
 */
function forPeople(message: string, names?: Names): string {
  const plain = withoutAgentAsides(message.replace(/^Agent (@?[a-z0-9][a-z0-9_-]*) not found\.$/, "Nobody here has the handle $1."));
  return names ? plain.replace(/@([a-z0-9][a-z0-9_-]{1,35})\b/g, (_, handle: string) => names.of(handle)) : plain;
}

const FALLBACK: Record<string, string> = {
  UNAUTHENTICATED: "You are not signed in any more. Sign in and try again.",
  FORBIDDEN: "You may not do this here.",
  NOT_FOUND: "This is no longer here.",
  CONFLICT: "This cannot be done as things are now. Reload the page to see what changed, then try again.",
  IDEMPOTENCY_KEY_REUSED: "This form was already sent. Open the page afresh to make a new one.",
  RATE_LIMITED: "Too many attempts. Wait a minute and try again.",
  STORAGE_UNAVAILABLE: "The server cannot save anything right now. Nothing was changed; try again in a minute.",
  INTERNAL: "Something went wrong on the server. Nothing was changed; try again later.",
};

/** What the tool said of each field, by the field's name, in a person's words. */
export function issuesByField(err: Pick<AppError, "details">): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of (err.details as { issues?: { path: string; message: string }[] } | undefined)?.issues ?? []) out[i.path] ??= issueText(i.path, i.message);
  return out;
}

// ---- What changed in an expense ----------------------------------------------------------------------------------

const FIELD_WORDS: Record<string, string> = {
  kind: "the kind",
  description: "the description",
  amount: "the amount",
  original: "the amount given in another currency",
  date: "the date",
  category: "the category",
  paid_by: "who paid",
  split: "the split",
  shares: "the shares",
  notes: "the notes",
  repeat: "how it repeats",
  repeat_until: "the last date it repeats",
  exchange_rate_source: "where the rate came from",
  refs: "its references",
  deleted: "deleted or restored",
  chosen_option: "the time chosen",
  options: "the options",
  invitees: "who is invited",
  title: "the title",
  respond_by: "the date to answer by",
};

/** An expense's changed fields (expense history, update notices) as words: "the amount, who paid". */
export const changedWords = (fields: string[]) => list(fields.map((f) => FIELD_WORDS[f] ?? f.replaceAll("_", " ")));

// ---- A group's activity ------------------------------------------------------------------------------------------

const SPLIT_WORDS: Record<string, string> = {
  equal: "equally",
  exact: "by exact amounts",
  percent: "by percentages",
  shares: "by shares",
  adjustment: "equally with adjustments",
};

/**
 * An activity entry (get_activity's summary_md, the server's own words with members' words quoted) for a person:
 * each @handle by the person's name, each quoted text as it was written (without the agents' "(quoted)" mark and
 * Markdown escapes), field names as words. Returns plain text, escaped where the page puts it.
 */
export function activityText(summary: string, names: Names): string {
  const parts: string[] = [];
  let rest = summary;
  // A member's words: “...” (quoted), their Markdown characters escaped (untrusted.ts quoted).
  const QUOTED = /“([^“”]*)” \(quoted\)/;
  for (let m = QUOTED.exec(rest); m; m = QUOTED.exec(rest)) {
    parts.push(ownWords(rest.slice(0, m.index), names), `“${m[1]!.replace(/\\([`*_[\]<>])/g, "$1")}”`);
    rest = rest.slice(m.index + m[0].length);
  }
  parts.push(ownWords(rest, names));
  return parts.join("");
}

/** The server's own words of an entry: people by name, a split's mode and changed fields in words. */
function ownWords(text: string, names: Names): string {
  return text
    .replace(/@([a-z0-9][a-z0-9_-]{1,35})/g, (_, handle: string) => names.of(handle))
    .replace(
      /\bsplit (equal|exact|percent|shares|adjustment) among (\d+)/g,
      (_, mode: string, n: string) => `split ${SPLIT_WORDS[mode]} among ${count(Number(n), "person", "people")}`,
    )
    .replace(/: ((?:[a-z_]+)(?:, [a-z_]+)*)$/, (all, fields: string) =>
      fields.split(", ").every((f) => f in FIELD_WORDS) ? `: ${changedWords(fields.split(", "))}` : all,
    );
}

// ---- Inbox items -------------------------------------------------------------------------------------------------

const text = (v: unknown): string | undefined =>
  typeof v === "string"
    ? v
    : v && typeof v === "object" && typeof (v as { untrusted_content?: unknown }).untrusted_content === "string"
      ? (v as { untrusted_content: string }).untrusted_content
      : undefined;
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
/** How a new app came (auth.client_connected's `via`), for a person: never the tool an agent used. */
const CONNECTED_VIA: Record<string, string> = {
  join_network: " by an agent that joined with a key of its own",
  oauth: " by signing in on svc's page and allowing it",
  account_page: " with an API key made on your account page",
};

/** What an item's sentence needs beyond the item: the people and the groups it names. */
export interface ItemWords {
  names: Names;
  /** Group names by group_id, for items that carry only the id. */
  groups: Map<string, string>;
}

/** The handles an item names in its payload, for reading their names before it is said (itemText). */
export const handlesOf = (i: InboxItem): string[] =>
  ["from", "to", "handle", "disputed_by", "inviter", "organiser", "voided_by"].flatMap((k) => {
    const v = i.payload[k];
    return typeof v === "string" ? [v] : [];
  });

/**
 * An inbox item as one sentence for its person, from its type and payload (never its summary_md, which speaks to an
 * agent). Members' words are in curly quotes; a note or a reason is shown quoted beside it by the page.
 */
export function itemText(i: InboxItem, w: ItemWords): Markup {
  const p = i.payload;
  const from = i.from ? w.names.of(i.from) : "Someone";
  const group = (i.refs.group_id && w.groups.get(i.refs.group_id)) || text(p.group_name);
  const inGroup = group ? html` in “${group}”` : "";
  const cur = typeof p.currency === "string" ? p.currency : "";
  const money = (v: unknown) => html`${typeof v === "string" ? v : ""} ${cur}`;
  const what = html`${p.kind === "refund" ? "the refund " : ""}“${text(p.description) ?? ""}” (${money(p.amount)})`;
  const minor = (v: unknown) => num(v) ?? 0;
  const mine = () =>
    youLine(
      p.kind === "refund" ? minor(p.your_share_minor) - minor(p.you_paid_minor) : minor(p.you_paid_minor) - minor(p.your_share_minor),
      (n) => (cur ? `${formatAmount(n, cur)} ${cur}` : String(n)),
      p.kind === "refund",
    );
  const parts = Array.isArray(p.parts) && p.parts.length > 1 ? " across your groups" : "";
  const who = (v: unknown) => (typeof v === "string" ? w.names.of(v) : "someone");
  switch (i.type) {
    case "contact.request":
      return html`${from} asks to become your contact.`;
    case "contact.accepted":
      return html`${from} accepted your contact request. You are now contacts.`;
    case "network.undelivered":
      return html`Something you sent to the server ${i.refs.host ?? "of another person"} was not delivered${p.reason === "refused" ? ": that server refused it" : ": it could not be reached for three days"}. Try again later.`;
    case "mail.envelope":
      return html`${from} sent you mail: “${text(p.subject) ?? ""}”.`;
    case "group.invitation":
      return html`${from} invites you to the group “${text(p.group_name) ?? group ?? ""}”${cur ? ` (${cur})` : ""}.`;
    case "group.member_joined":
      return html`${p.member && typeof p.member === "object" ? w.names.of(p.member as Person) : from} joined ${group ? html`the group “${group}”` : "your group"}.`;
    case "ledger.expense_added":
      return html`${from} added ${what}${inGroup}: ${mine()}.`;
    case "ledger.expense_updated":
      return p.change === "restored"
        ? html`${from} restored ${what}${inGroup}: ${mine()}.`
        : html`${from} changed ${what}${inGroup}${Array.isArray(p.changed_fields) && p.changed_fields.length ? ` (${changedWords(p.changed_fields as string[])})` : ""}: now ${mine()}.`;
    case "ledger.expense_deleted":
      return html`${from} deleted ${what}${inGroup}: it no longer counts in the balances.`;
    case "ledger.expense_disputed":
      return html`${from} disputes ${what}${inGroup}.`;
    case "ledger.placeholder_claimed":
      return html`You took the place of ${text(p.name) ?? "a friend"}${inGroup}, with what was added for them: check each expense and confirm or dispute it.`;
    case "ledger.payment_to_confirm":
      return html`${who(p.from)} says they paid you ${money(p.amount)}${parts}${inGroup}. Confirm it once you have the money, or reject it.`;
    case "ledger.payment_confirmed":
      return html`${from} confirmed your payment of ${money(p.amount)}${parts}${inGroup}: it counts in the balances.`;
    case "ledger.payment_rejected":
      return html`${from} rejected your payment of ${money(p.amount)}${parts}${inGroup}: it does not count.`;
    case "ledger.payment_voided":
      return html`${from} voided the payment of ${money(p.amount)} from ${who(p.from)} to ${who(p.to)}${parts}${inGroup}: it no longer counts.`;
    case "auth.client_connected":
      return html`A new app, “${text(p.client_name) ?? ""}”, was connected to your account${CONNECTED_VIA[String(p.via)] ?? ""}. If it was not you, disconnect it on <a href="/account">your account page</a>.`;
    case "plan.invitation":
      return html`${from} invites you to a plan: “${text(p.title) ?? ""}”.`;
    case "plan.response":
      return html`${who(p.handle)} answered ${typeof p.response === "string" ? p.response : "your invitation"} to your plan “${text(p.title) ?? ""}”.`;
    case "plan.changed":
      return Array.isArray(p.changes) && p.changes.includes("chosen_option")
        ? html`${from} chose a time for the plan “${text(p.title) ?? ""}”.`
        : html`${from} changed the plan “${text(p.title) ?? ""}”${Array.isArray(p.changes) && p.changes.length ? ` (${changedWords(p.changes as string[])})` : ""}.`;
    case "plan.cancelled":
      return p.reason === "uninvited"
        ? html`${from} took you off the plan “${text(p.title) ?? ""}”.`
        : html`${from} cancelled the plan “${text(p.title) ?? ""}”.`;
    default:
      return html`${(INBOX_TYPES as Record<string, { description: string }>)[i.type]?.description ?? "Something happened."}`;
  }
}

/** The words another person wrote in an item beyond its sentence: a note, a dispute's reason. */
export const itemNote = (i: InboxItem): string | null => i.note?.untrusted_content ?? null;

// ---- The app offline ---------------------------------------------------------------------------------------------

/** Atop a page the service worker shows offline, as the person last read it (webapp.ts, sw.js). */
export const OFFLINE_BANNER = "You are offline: this is the page as you last saw it; nothing can be changed.";
/** A page the person did not read while signed in on this device, asked for offline. */
export const OFFLINE_NOT_SAVED = "You are offline, and this page was not saved on this device. Pages you read while signed in can be read offline.";
