// What the web app's own pages share (dashboard, group settings, contacts, inbox): a button that is one tool call
// (its action is framework.ts toolForm), a field's value and error shown again, and the quoted block for other
// people's words.
import type { InboxItem } from "../contract/wire.ts";
import type { WebContext } from "./context.ts";
import { form, html, type Markup } from "./html.ts";
import type { FormMessages } from "./framework.ts";
import { formKey } from "./form-keys.ts";

/**
 * The buttons of one action: each form carries the action's own idempotency key, the same for each rendering of
 * this view of the page (form-keys.ts), so pressed again after Back it is replayed, not done twice.
 */
export const button = (c: WebContext, to: string, fields: Record<string, string>, label: string, opts: { secondary?: boolean; ariaLabel?: string } = {}) =>
  form(to, c.session.csrfToken, html`${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}`, label, {
    inline: true,
    idempotencyKey: formKey(c, `${to} ${JSON.stringify(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))}`),
    ...opts,
  });

/** A form field's value and error when the page is shown again for this form, so nothing typed is lost. */
export function again(m: FormMessages, formName: string, name: string): { value?: string; error?: string } {
  if (m.form !== formName) return {};
  return { value: m.values?.get(name) ?? undefined, error: m.issues?.[name] };
}

/** A form field as a tool argument: an empty optional field is left out, so the tool's default applies. */
export const optional = (f: URLSearchParams, name: string) => {
  const v = f.get(name)?.trim();
  return v ? v : undefined;
};
/** A required field is always sent (empty too), so the tool names it in details.issues. */
export const required = (f: URLSearchParams, name: string) => (f.get(name) ?? "").trim();

/**
 * What another person wrote in an item beyond what its sentence quotes (wording.ts itemText): the note (a contact
 * request's, an expense's notes, a dispute's reason), a plan's description; each a quoted block naming the writer.
 */
export function quoted(item: Pick<InboxItem, "payload" | "note" | "type">, writer: string): Markup[] {
  const found: string[] = [];
  const description = item.payload.description as { untrusted_content?: unknown } | null | undefined;
  if (item.type.startsWith("plan.") && typeof description?.untrusted_content === "string") found.push(description.untrusted_content);
  if (item.note) found.push(item.note.untrusted_content);
  return [...new Set(found)].filter(Boolean).map((text) => quote(text, writer));
}

/** Words someone else wrote: always inside a blockquote that says whose they are, never as the page's own text. */
export const quote = (text: string, who: string) => html`<blockquote><p>${text}</p><footer>written by ${who}</footer></blockquote>`;

// A Markdown link [text](url), or a bare http(s) URL (up to whitespace or a closing bracket or quote).
const MAIL_LINK = /\[([^\]\n]{1,1000})\]\((https?:\/\/[^\s()]+)\)|https?:\/\/[^\s<>"'`)\]]+/g;

/**
 * One line of someone's mail with each http(s) link shown by the domain it leads to: a link the mail's checks found
 * nothing wrong with (`safe`) is followable, its visible text the domain itself; any other stays text, its domain
 * said beside it.
 */
function mailLine(line: string, safe: ReadonlySet<string>): Markup[] {
  const out: Markup[] = [];
  let at = 0;
  for (const m of line.matchAll(MAIL_LINK)) {
    const url = (m[2] ?? m[0]).replace(/[.,;:!?]+$/, "");
    let domain: string;
    try {
      domain = new URL(url).hostname;
    } catch {
      continue;
    }
    const end = m[2] ? m.index + m[0].length : m.index + url.length;
    out.push(html`${line.slice(at, m.index)}${m[1] ? html`${m[1]} ` : ""}`);
    out.push(
      safe.has(url)
        ? html`${m[1] ? "(" : ""}<a href="${url}" rel="nofollow noopener noreferrer">${domain}</a>${m[1] ? ")" : ""}`
        : html`${m[1] ? "" : html`${url} `}<span class="muted">(leads to ${domain})</span>`,
    );
    at = end;
  }
  out.push(html`${line.slice(at)}`);
  return out;
}

/**
 * Someone's mail as a person reads it: paragraphs and lines as written, each link shown by its domain (mailLine),
 * the rest as text (never HTML); inside a blockquote that says whose words they are.
 */
export function quoteMail(text: string, who: string, links: readonly { url: string; warnings: readonly string[] }[]): Markup {
  const safe = new Set(links.filter((l) => !l.warnings.length).map((l) => l.url));
  const paragraphs = text
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => html`<p>${p.split("\n").map((line, i) => html`${i ? html`<br>` : ""}${mailLine(line, safe)}`)}</p>`);
  return html`<blockquote>${paragraphs}<footer>written by ${who}</footer></blockquote>`;
}
