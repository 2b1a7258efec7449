// What the web app's own pages share (dashboard, group settings, contacts, inbox): a button that is one tool call,
// a form action that calls one tool through invoke() and either redirects (PRG) or shows the form again with the
// tool's errors beside their fields, and the quoted block for other people's words.
import type { InboxItem } from "../contract/wire.ts";
import type { Messages, WebContext } from "./context.ts";
import { form, html, type Markup } from "./html.ts";
import type { ActionContext } from "./pages.ts";
import { seeOther } from "./html.ts";
import { formKey } from "./form-keys.ts";

/** A page shown again after a refused form: which form, the values sent, and the tool's issues by field. */
export interface FormMessages extends Messages {
  form?: string;
  values?: URLSearchParams;
  issues?: Record<string, string>;
}

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
 * A form that performs one tool call as the browser's client: done, a 303 to where `done` says (a reload repeats
 * nothing); refused, the page again (`show`) with the tool's message and each issue beside its field.
 */
export function toolForm(opts: {
  tool: string;
  form: string;
  args: (f: URLSearchParams, param: string) => Record<string, unknown>;
  done: (data: Record<string, any>, param: string, f: URLSearchParams) => string;
  show: (c: WebContext, param: string, m: FormMessages) => Promise<Response>;
}) {
  return async (a: ActionContext, param: string): Promise<Response> => {
    const result = await a.call(opts.tool, opts.args(a.form, param));
    if (result.ok) return seeOther(opts.done(result.data, param, a.form));
    const err = result.error;
    // A group the human is not in is NOT_FOUND again when the page is read: the 404 page, as for any address.
    const issues: Record<string, string> = {};
    const listed = (err.details as { issues?: { path: string; message: string }[] } | undefined)?.issues ?? [];
    for (const i of listed) issues[i.path] ??= i.message;
    return a.show((c) => opts.show(c, param, { error: err.message, status: err.status, form: opts.form, values: a.form, issues }));
  };
}

/** Every value another person wrote in an item (fields marked untrusted_content), as quoted blocks naming the writer. */
export function quoted(item: Pick<InboxItem, "payload" | "note" | "from">): Markup[] {
  const found: string[] = [];
  const walk = (v: unknown) => {
    if (!v || typeof v !== "object") return;
    if (typeof (v as { untrusted_content?: unknown }).untrusted_content === "string") {
      found.push((v as { untrusted_content: string }).untrusted_content);
      return;
    }
    for (const x of Object.values(v)) walk(x);
  };
  walk(item.payload);
  if (item.note) found.push(item.note.untrusted_content);
  const who = item.from ? `@${item.from.handle}` : "another member";
  return [...new Set(found)].filter(Boolean).map((text) => quote(text, who));
}

/** Words someone else wrote: always inside a blockquote that says whose they are, never as the page's own text. */
export const quote = (text: string, who: string) => html`<blockquote><p>${text}</p><footer>written by ${who}</footer></blockquote>`;
