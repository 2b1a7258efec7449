// What the web app's own pages share (dashboard, group settings, contacts, inbox): a button that is one tool call,
// a form action that calls one tool through invoke() and either redirects (PRG) or shows the form again with the
// tool's errors beside their fields, and the quoted block for other people's words.
import type { InboxItem } from "../contract/wire.ts";
import type { Messages, WebContext } from "./context.ts";
import { form, html, type Markup } from "./html.ts";
import type { ActionContext } from "./pages.ts";
import { seeOther } from "./html.ts";
import { formKey } from "./form-keys.ts";
import { errorText, issuesByField } from "./wording.ts";

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
    // The page says it in a person's words (wording.ts), each issue beside its field.
    return a.show((c) => opts.show(c, param, { error: errorText(err), status: err.status, form: opts.form, values: a.form, issues: issuesByField(err) }));
  };
}

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
