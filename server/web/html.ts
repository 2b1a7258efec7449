// Server-rendered HTML: every interpolated value is escaped unless it is already markup built here.
import { createHash } from "node:crypto";

export class Markup {
  constructor(readonly text: string) {}
  toString() {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

function render(value: unknown): string {
  if (value instanceof Markup) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

/** Tagged template: `html\`<p>${name}</p>\`` escapes name; nested html`` fragments and arrays of them pass through. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Markup {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Markup(out);
}

const STYLE = `
:root{color-scheme:light dark;font-family:system-ui,sans-serif;line-height:1.5}
body{margin:0;padding:1.5rem;display:flex;justify-content:center}
main{max-width:36rem;width:100%}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
form{margin:1rem 0;display:grid;gap:.5rem}
label{font-weight:600}
input,textarea,button{font:inherit;padding:.5rem;border-radius:.4rem;border:1px solid #888}
button{cursor:pointer;background:#2454c5;color:#fff;border-color:#2454c5}
button.secondary{background:transparent;color:inherit;border-color:#888}
.inline{display:inline}
.row{display:flex;gap:.5rem;flex-wrap:wrap}
.notice{padding:.75rem;border-radius:.4rem;border:1px solid #2454c5}
.error{padding:.75rem;border-radius:.4rem;border:1px solid #c52424}
.secret{font-family:ui-monospace,monospace;word-break:break-all;padding:.75rem;border:1px dashed #888}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.35rem;border-bottom:1px solid #8884}
.muted{opacity:.75}
`;
const STYLE_HASH = `'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`;

export interface PageOptions {
  status?: number;
  /** Origins (or schemes) a form on this page may end up at after redirects, besides this server. */
  formTargets?: string[];
  headers?: Record<string, string>;
}

/** A whole page with the strict headers every page carries: no script at all, styles only by hash, no framing. */
export function page(title: string, body: Markup, opts: PageOptions = {}): Response {
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title} · svc</title>
<style>${new Markup(STYLE)}</style>
</head>
<body>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
  const formAction = ["'self'", ...(opts.formTargets ?? [])].join(" ");
  return new Response(doc.text, {
    status: opts.status ?? 200,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": `default-src 'none'; style-src ${STYLE_HASH}; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      "X-Frame-Options": "DENY",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
      ...opts.headers,
    },
  });
}

/** A form that posts to this server with the session's CSRF token. */
export function form(action: string, csrf: string, fields: Markup, button: string, opts: { secondary?: boolean; inline?: boolean; ariaLabel?: string } = {}): Markup {
  return html`<form method="post" action="${action}"${opts.inline ? new Markup(' class="inline"') : ""}>
<input type="hidden" name="csrf" value="${csrf}">
${fields}<button type="submit"${opts.secondary ? new Markup(' class="secondary"') : ""}${opts.ariaLabel ? html` aria-label="${opts.ariaLabel}"` : ""}>${button}</button>
</form>`;
}

export interface FieldOptions {
  value?: string | null;
  type?: string;
  required?: boolean;
  hint?: string;
  autocomplete?: string;
  maxlength?: number;
  pattern?: string;
  multiline?: boolean;
}

/** A labelled input; the hint is tied to it with aria-describedby. */
export function field(name: string, label: string, o: FieldOptions = {}): Markup {
  const id = `f-${name}`;
  const hint = o.hint ? html`<small id="${id}-hint" class="muted">${o.hint}</small>` : "";
  const attrs = html`id="${id}" name="${name}"${o.required ? new Markup(" required") : ""}${o.maxlength ? html` maxlength="${o.maxlength}"` : ""}${o.pattern ? html` pattern="${o.pattern}"` : ""}${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ""}${o.hint ? html` aria-describedby="${id}-hint"` : ""}`;
  const input = o.multiline
    ? html`<textarea ${attrs} rows="4">${o.value ?? ""}</textarea>`
    : html`<input ${attrs} type="${o.type ?? "text"}" value="${o.value ?? ""}">`;
  return html`<label for="${id}">${label}</label>${input}${hint}`;
}

export const alert = (message: string | null | undefined) => (message ? html`<p class="error" role="alert">${message}</p>` : "");
export const notice = (message: string | null | undefined) => (message ? html`<p class="notice" role="status">${message}</p>` : "");

/** 303 See Other: the browser follows with a GET, so a reload never posts a form twice. */
export function seeOther(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { Location: location, "Cache-Control": "no-store", ...headers } });
}
