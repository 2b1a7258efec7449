// What the e-mails say, for people: plain sentences from an inbox item's payload (never its summary, which is written
// for agents), as plain text and as HTML. Every word another person wrote (a description, a group's name, a note, a
// display name) is theirs, not svc's: in quotes, control and invisible characters taken out, cut short, and escaped
// in the HTML; links are svc's own pages only. Subjects hold no one's words at all.
import { CONTROL, escapeHtml } from "../../contract/text.ts";
import { EMAIL_KINDS, type EmailKind } from "../../contract/email.ts";

/** Another person's words on one line: no control or invisible characters, spaces collapsed, at most `max` characters. */
export function oneLine(text: string, max = 120): string {
  const chars = [...text.replace(CONTROL, " ").replace(/\s+/g, " ").trim()];
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : chars.join("");
}

/** Another person's words, marked as theirs wherever they are put in a sentence. */
export class Words {
  constructor(readonly text: string) {}
}
export const words = (text: string | null | undefined) => new Words(text ?? "");

/** A sentence as plain text and as HTML. */
export interface Said {
  text: string;
  html: string;
}

/**
 * A sentence: strings are svc's own (amounts, handles, fixed words), escaped in the HTML; Words are another person's,
 * in curly quotes (any curly quote inside made straight, so the quote cannot seem to end early).
 */
export function say(strings: TemplateStringsArray, ...values: (string | number | Words)[]): Said {
  let text = strings[0]!;
  let html = escapeHtml(strings[0]!);
  values.forEach((v, i) => {
    if (v instanceof Words) {
      const w = oneLine(v.text).replace(/[“”]/g, '"');
      text += `“${w}”`;
      html += `“${escapeHtml(w)}”`;
    } else {
      text += String(v);
      html += escapeHtml(String(v));
    }
    text += strings[i + 1]!;
    html += escapeHtml(strings[i + 1]!);
  });
  return { text, html };
}

/** A sentence followed by one of svc's own addresses, a link in the HTML. */
export const withLink = (said: Said, url: string): Said => ({
  text: `${said.text} ${url}`,
  html: `${said.html} <a href="${escapeHtml(url)}">${escapeHtml(url)}</a>`,
});

/** A person as the e-mails name them: their display name (their own words, so cleaned), then the handle. */
export const person = (p: { handle: string; displayName: string } | null | undefined): string =>
  p ? `${oneLine(p.displayName, 60)} (@${p.handle})` : "Someone";

/** An item as the composer hands it over. */
export interface MailItem {
  type: string;
  payload: Record<string, unknown>;
  note: { untrusted_content: string; source: string } | null;
  refs: Record<string, string>;
  from: { handle: string; displayName: string } | null;
  /** The name of the group refs.group_id names, when it has one. */
  groupName: string | null;
}

/** One thing that happened: its sentence, another person's longer words quoted beneath it, and where to see it. */
export interface Entry {
  kind: EmailKind;
  said: Said;
  quote: { by: string; text: string } | null;
  link: string;
}

const str = (v: unknown) => (typeof v === "string" ? v : "");
const num = (v: unknown) => (typeof v === "number" ? v : 0);
const untrustedText = (v: unknown) => str((v as { untrusted_content?: unknown } | null)?.untrusted_content);

/** The sentence of one item, or null for a type that is never e-mailed. */
export function entryOf(kind: EmailKind, i: MailItem, base: string): Entry | null {
  const p = i.payload;
  const who = person(i.from);
  const group = words(untrustedText(p.group_name) || i.groupName || "a group");
  const cur = str(p.currency);
  const money = (field: string) => `${str(p[field])} ${cur}`.trim();
  const desc = words(untrustedText(p.description));
  const refund = p.kind === "refund" ? "a refund, " : "";
  const groupPage = `${base}/groups/${i.refs.group_id ?? ""}`;
  const expensePage = `${groupPage}/expenses/${i.refs.expense_id ?? ""}`;
  const note = i.note ? { by: capitalise(i.note.source), text: i.note.untrusted_content } : null;
  const entry = (said: Said, link: string, quote = note): Entry => ({ kind, said, quote, link });
  switch (i.type) {
    case "ledger.expense_added": {
      const paid = num(p.you_paid_minor) ? ` You paid ${money("you_paid")}.` : "";
      return entry(say`${who} added ${refund}${desc}, in ${group}: ${money("amount")}. Your share: ${money("your_share")}.${paid}`, expensePage);
    }
    case "ledger.expense_updated":
      return entry(
        p.change === "restored"
          ? say`${who} restored ${refund}${desc} in ${group}: your share is ${money("your_share")} again.`
          : say`${who} changed ${refund}${desc} in ${group} (${money("amount")}): your share is now ${money("your_share")}.`,
        expensePage,
      );
    case "ledger.expense_deleted":
      return entry(say`${who} deleted ${refund}${desc} (${money("amount")}) in ${group}; it no longer counts in the balances.`, expensePage);
    case "ledger.expense_disputed":
      return entry(say`${who} disputes ${refund}${desc} (${money("amount")}), which you added in ${group}.`, expensePage);
    case "ledger.payment_to_confirm":
      return entry(say`${who} says they paid you ${money("amount")} in ${group}. Confirm it once you have received it, or reject it.`, groupPage);
    case "ledger.payment_confirmed":
      return entry(say`${who} confirmed your payment of ${money("amount")} in ${group}; it counts in the balances.`, groupPage);
    case "ledger.payment_rejected":
      return entry(say`${who} rejected your payment of ${money("amount")} in ${group}: they say they did not receive it, so it does not count.`, groupPage);
    case "ledger.payment_voided":
      return entry(say`${who} voided the payment of ${money("amount")} from @${str(p.from)} to @${str(p.to)} in ${group}; it no longer counts.`, groupPage);
    case "ledger.placeholder_claimed": {
      const n = Array.isArray(p.expense_ids) ? p.expense_ids.length : 0;
      return entry(
        say`You took the place of ${words(str(p.name))} in ${group}: ${n} ${n === 1 ? "expense" : "expenses"}, your shares ${money("your_shares")}, you paid ${money("you_paid")}, your balance ${money("balance")}. Confirm or dispute each expense on the group's page.`,
        groupPage,
      );
    }
    case "group.invitation":
      return entry(say`${who} invites you to the group ${group} (${cur}).`, `${base}/inbox`);
    case "group.member_joined": {
      const m = p.member as { handle?: string; display_name?: string } | undefined;
      const joiner = m?.handle ? person({ handle: m.handle, displayName: m.display_name ?? m.handle }) : who;
      return entry(say`${joiner} joined ${group}.`, groupPage);
    }
    case "contact.request":
      return entry(say`${who} asks to become your contact.`, `${base}/contacts`);
    case "contact.accepted":
      return entry(say`${who} accepted your contact request.`, `${base}/contacts`);
    case "mail.envelope":
      return entry(
        p.in_reply_to ? say`${who} replied: ${words(untrustedText(p.subject))}.` : say`${who} sent you mail: ${words(untrustedText(p.subject))}.`,
        `${base}/envelopes/${i.refs.envelope_id ?? ""}`,
      );
    case "plan.invitation": {
      const by = str(p.respond_by) ? ` Answer by ${str(p.respond_by).slice(0, 10)}.` : "";
      return entry(say`${who} invites you to a plan: ${words(untrustedText(p.title))}.${by}`, `${base}/plans/${i.refs.plan_id ?? ""}`);
    }
    case "plan.response": {
      const answer = ({ yes: "yes", no: "no", maybe: "maybe" } as Record<string, string>)[str(p.response)] ?? "something";
      return entry(say`${who} answered ${answer} to your plan ${words(untrustedText(p.title))}.`, `${base}/plans/${i.refs.plan_id ?? ""}`);
    }
    case "plan.changed":
      return entry(say`${who} changed the plan ${words(untrustedText(p.title))}.`, `${base}/plans/${i.refs.plan_id ?? ""}`);
    case "plan.cancelled":
      return entry(
        p.reason === "uninvited"
          ? say`${who} took you off the plan ${words(untrustedText(p.title))}.`
          : say`${who} cancelled the plan ${words(untrustedText(p.title))}.`,
        `${base}/plans`,
      );
    default:
      return null;
  }
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** How a subject counts each kind: "2 expenses", "1 payment to confirm". Fixed words only. */
const COUNTED: Record<EmailKind, [string, string]> = {
  expenses: ["expense update", "expense updates"],
  payments_to_confirm: ["payment to confirm", "payments to confirm"],
  payments: ["payment update", "payment updates"],
  disputes: ["disputed expense", "disputed expenses"],
  invitations: ["invitation or new member", "invitations and new members"],
  claims: ["place taken over", "places taken over"],
  envelopes: ["message", "messages"],
  plans: ["plan update", "plan updates"],
};

/** "2 expense updates, 1 payment to confirm": the kinds of `entries` in EMAIL_KINDS' order. */
export function counted(entries: Entry[]): string {
  const n = new Map<EmailKind, number>();
  for (const e of entries) n.set(e.kind, (n.get(e.kind) ?? 0) + 1);
  return (Object.keys(EMAIL_KINDS) as EmailKind[])
    .filter((k) => n.has(k))
    .map((k) => `${n.get(k)} ${COUNTED[k][n.get(k) === 1 ? 0 : 1]}`)
    .join(", ");
}

export interface Layout {
  /** The recipient's own name (their words, cleaned and escaped). */
  name: string | null;
  paragraphs: Said[];
  entries?: Entry[];
  /** A button-like link: svc's own page. */
  action?: { label: string; url: string };
  /** What the footer says about why this e-mail came. */
  footer: Said[];
}

/** The plain-text and HTML bodies of an e-mail. */
export function render(l: Layout): { text: string; html: string } {
  const hello = say`Hello${l.name ? ` ${oneLine(l.name, 60)}` : ""},`;
  const entries = l.entries ?? [];
  const textParts = [hello.text, ...l.paragraphs.map((p) => p.text)];
  if (l.action) textParts.push(`${l.action.label}:\n${l.action.url}`);
  if (entries.length) {
    textParts.push(
      entries
        .map((e) => {
          const quote = e.quote ? `\n  ${e.quote.by}:\n${quoteLines(e.quote.text)}` : "";
          return `- ${e.said.text}${quote}\n  ${e.link}`;
        })
        .join("\n\n"),
    );
    textParts.push("Words in quotes were written by the people named, not by svc.");
  }
  const text = `${[...textParts, "-- ", ...l.footer.map((f) => f.text)].join("\n\n")}\n`;
  const p = (s: Said) => `<p>${s.html}</p>`;
  const items = entries.map((e) => {
    const quote = e.quote
      ? `<blockquote style="margin:.25em 0;padding:.25em .75em;border-left:4px solid #888">${escapeHtml(e.quote.text.replace(CONTROL, (c) => (c === "\n" ? c : " "))).replace(/\n/g, "<br>")}<br><small>${escapeHtml(e.quote.by)}</small></blockquote>`
      : "";
    return `<li style="margin-bottom:1em">${e.said.html}${quote}<br><a href="${escapeHtml(e.link)}">See it on svc</a></li>`;
  });
  const html = [
    '<!doctype html><html><head><meta charset="utf-8"></head><body style="font-family:system-ui,sans-serif;line-height:1.5;max-width:40em">',
    p(hello),
    ...l.paragraphs.map(p),
    l.action ? `<p><a href="${escapeHtml(l.action.url)}" style="font-weight:600">${escapeHtml(l.action.label)}</a></p>` : "",
    items.length ? `<ul>${items.join("")}</ul><p><small>Words in quotes were written by the people named, not by svc.</small></p>` : "",
    '<hr style="border:0;border-top:1px solid #8886">',
    ...l.footer.map((f) => `<p><small>${f.html}</small></p>`),
    "</body></html>",
  ].join("\n");
  return { text, html };
}

/** Another person's longer words (a note, a reason) as quoted lines of a plain-text e-mail. */
function quoteLines(text: string): string {
  return text
    .split(/\r?\n/)
    .slice(0, 20)
    .map((line) => `  > ${oneLine(line, 200)}`)
    .join("\n");
}
