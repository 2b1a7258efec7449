// Server-rendered HTML: every interpolated value is escaped unless it is already markup built here.
import { escapeHtml } from "../contract/text.ts";
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import localTimeScript from "./local-time.js" with { type: "text" };

export class Markup {
  constructor(readonly text: string) {}
  toString() {
    return this.text;
  }
}

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
:root{color-scheme:light dark;font-family:system-ui,sans-serif;line-height:1.5;background:Canvas;color:CanvasText}
body{margin:0;padding:1rem 1.5rem 1.5rem;display:flex;flex-direction:column;align-items:center}
header,main{max-width:40rem;width:100%}
header nav{display:flex;flex-wrap:wrap;gap:.25rem 1rem;padding-bottom:.5rem;border-bottom:1px solid #8886}
header nav a:first-child{font-weight:700;margin-right:auto}
h1{font-size:1.5rem;overflow-wrap:anywhere}h2{font-size:1.15rem;margin-top:2rem}
p,li,td,th,dd{overflow-wrap:anywhere}
form{margin:1rem 0;display:grid;gap:.5rem}
label{font-weight:600}
fieldset{border:1px solid #8886;border-radius:.4rem}fieldset label{font-weight:400}
input,textarea,button{font:inherit;padding:.5rem;border-radius:.4rem;border:1px solid #888;max-width:100%;box-sizing:border-box}
select{font:inherit;padding:.5rem;border-radius:.4rem;max-width:100%}fieldset{display:grid;gap:.5rem;border:1px solid #8886;border-radius:.4rem;min-width:0}legend{font-weight:600}
button{cursor:pointer;background:#2454c5;color:#fff;border-color:#2454c5}
button.secondary{background:transparent;color:inherit;border-color:#888}
button.link{background:transparent;color:inherit;border:0;padding:0;text-decoration:underline}
.inline{display:inline}
.row{display:flex;gap:.5rem;flex-wrap:wrap}
.actions{display:flex;gap:.75rem;flex-wrap:wrap;margin:1.5rem 0}
.actions form{margin:0;flex:1 1 10rem}
.actions button{width:100%;padding:.75rem 1rem;font-size:1.1rem;font-weight:600}
.actions button.secondary{border:2px solid currentColor}
.notice{padding:.75rem;border-radius:.4rem;border:1px solid #2454c5}
.error{padding:.75rem;border-radius:.4rem;border:1px solid #c52424}
.field-error{color:#c52424;font-weight:600}
.secret{font-family:ui-monospace,monospace;word-break:break-all;padding:.75rem;border:1px dashed #888}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.35rem;border-bottom:1px solid #8884;vertical-align:top}
td.num,th.num{text-align:right;white-space:nowrap}td.date{white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
pre{overflow-x:auto;padding:.75rem;border:1px solid #8886;border-radius:.4rem;font-size:.9rem}
code{font-family:ui-monospace,monospace;overflow-wrap:anywhere}pre code{overflow-wrap:normal}
.cards{list-style:none;padding:0;display:grid;gap:.75rem}
.cards>li{border:1px solid #8886;border-radius:.4rem;padding:.75rem;display:grid;gap:.25rem}
.cards dl{display:grid;grid-template-columns:max-content 1fr;gap:0 .75rem;margin:0}.cards dd{margin:0}
.cards form{margin:.25rem 0 0;display:block}
.badge{display:inline-block;font-size:.85rem;padding:0 .4rem;border-radius:.3rem;border:1px solid currentColor;font-weight:600}
.chart{width:100%;max-width:28rem;height:auto;display:block}
.chart text{fill:currentColor;font-size:13px}.chart .axis{stroke:currentColor;stroke-opacity:.6}
.owed{fill:#1a7f37}.owes,.refunded{fill:#c52424}.spent{fill:#2f62b8}
.muted{opacity:.8}
blockquote{margin:.25rem 0;padding:.25rem .75rem;border-left:4px solid #888}blockquote footer{font-size:.85rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.pager{display:flex;gap:1rem;flex-wrap:wrap;justify-content:space-between}
.skip{position:absolute;left:.5rem;top:-4rem;padding:.5rem 1rem;border-radius:.4rem;background:#2454c5;color:#fff;z-index:1}.skip:focus{top:.5rem}
main:focus{outline:none}[data-passkey-status]:empty{margin:0}
details.more{border:1px solid #8886;border-radius:.4rem;padding:.25rem .75rem}details.more[open]{display:grid;gap:.5rem;padding-bottom:.75rem}
details.more>summary{cursor:pointer;padding:.5rem 0;font-weight:600}details.more[open] .when-closed,details.more:not([open]) .when-open{display:none}
a.add{position:fixed;right:1rem;bottom:1rem;z-index:1;padding:.9rem 1.4rem;border-radius:2rem;background:#2454c5;color:#fff;font-size:1.1rem;font-weight:700;text-decoration:none;box-shadow:0 2px 8px #0006}
a.add:focus-visible{outline:3px solid CanvasText;outline-offset:2px}main:has(a.add){padding-bottom:5rem}
.offline{padding:.75rem;border-radius:.4rem;border:2px solid currentColor;font-weight:600}
fieldset.offline-off{border:0;padding:0;margin:0}
@media (prefers-color-scheme:dark){.field-error{color:#ff8a80}.error{border-color:#ff8a80}.notice{border-color:#8fa8ff}}
`;
const STYLE_HASH = `'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`;

export interface PageOptions {
  status?: number;
  /** Origins (or schemes) a form on this page may end up at after redirects, besides this server. */
  formTargets?: string[];
  headers?: Record<string, string>;
  /** Scripts of this server the page loads (passkeys need one); the CSP then allows 'self' scripts and fetches. */
  scripts?: string[];
  /** A page that must read the same for everyone (an error, the 404 page, which tells nothing): no unseen count. */
  same?: boolean;
}

/**
 * What the page being answered knows of its reader, set once per request by the page runner (pages.ts inSession):
 * how many inbox items they have not seen, for the nav. Pages answered outside it (a refused form before its
 * session is read) show no count.
 */
export const reader = new AsyncLocalStorage<{ unseen: number }>();

/** The nav's count of unseen items: "Inbox 3 unseen", 99+ past 99. */
function inboxLink(same = false): Markup {
  const n = same ? 0 : (reader.getStore()?.unseen ?? 0);
  if (!n) return html`<a href="/inbox">Inbox</a>`;
  return html`<a href="/inbox">Inbox <span class="badge">${n > 99 ? "99+" : n}<span class="visually-hidden"> unseen</span></span></a>`;
}

/** The script that shows each <time> of a page in the reader's time zone (local-time.js). */
export const LOCAL_TIME_SCRIPT = "/assets/local-time.js";

/** GET of one of this server's own small scripts (/assets/*.js), the only scripts its pages load. */
export const serveScript = (source: string) =>
  new Response(source, {
    headers: { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff" },
  });

/** GET /assets/local-time.js: times in the reader's time zone (UTC without it). */
export const serveLocalTimeScript = () => serveScript(localTimeScript);

/** The script of every page (webapp.ts app.js): the service worker's registration, focus after a refused form. */
export const APP_SCRIPT = "/assets/app.js";
/** The script of a page with a passkey button (passkey.js), which asks the server for WebAuthn options. */
export const PASSKEY_SCRIPT = "/assets/passkey.js";

/**
 * A whole page with the strict headers every page carries: no script but this server's own, styles only by hash, no
 * framing. It opens with a link that skips to its content, and links the web app manifest (webapp.ts).
 */
export function page(title: string, body: Markup, opts: PageOptions = {}): Response {
  // A page with times loads the script that says them in the reader's zone (without it they read in UTC); one with a
  // passkey button, the script that asks for the passkey.
  const scripts = [
    ...new Set([
      APP_SCRIPT,
      ...(opts.scripts ?? []),
      ...(body.text.includes("data-passkey=") ? [PASSKEY_SCRIPT] : []),
      ...(body.text.includes("<time datetime=") ? [LOCAL_TIME_SCRIPT] : []),
    ]),
  ];
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="theme-color" content="#2454c5">
<link rel="manifest" href="/manifest.webmanifest">
<link rel="icon" href="/icons/icon-192.png" type="image/png">
<link rel="apple-touch-icon" href="/icons/icon-192.png">
<title>${title} · svc</title>
<style>${new Markup(STYLE)}</style>
${scripts.map((src) => html`<script src="${src}" defer></script>\n`)}</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><nav aria-label="Site"><a href="/">svc</a><a href="/groups">Groups</a><a href="/contacts">Contacts</a>${inboxLink(opts.same)}<a href="/envelopes">Mail</a><a href="/plans">Plans</a><a href="/account">Account</a><a href="/docs">Docs</a></nav></header>
<main id="main" tabindex="-1">
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
  const formAction = ["'self'", ...(opts.formTargets ?? [])].join(" ");
  // Only a passkey's script fetches (its WebAuthn options); every page may register the service worker.
  const scriptSrc = `; script-src 'self'${scripts.includes(PASSKEY_SCRIPT) ? "; connect-src 'self'" : ""}; worker-src 'self'; manifest-src 'self'`;
  return new Response(doc.text, {
    status: opts.status ?? 200,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": `default-src 'none'; style-src ${STYLE_HASH}; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'${scriptSrc}`,
      "X-Frame-Options": "DENY",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
      ...opts.headers,
    },
  });
}

/** A form that posts to this server with the session's CSRF token. */
export function form(
  action: string,
  csrf: string,
  fields: Markup,
  button: string,
  opts: { secondary?: boolean; link?: boolean; inline?: boolean; ariaLabel?: string; idempotencyKey?: string } = {},
): Markup {
  const look = opts.link ? "link" : opts.secondary ? "secondary" : "";
  // A form that performs a tool call carries the key of that one action: sent twice (a double click, a reload, the
  // back button), it is done once and answered the same.
  const key = opts.idempotencyKey ? html`<input type="hidden" name="idempotency_key" value="${opts.idempotencyKey}">\n` : "";
  return html`<form method="post" action="${action}"${opts.inline ? new Markup(' class="inline"') : ""}>
<input type="hidden" name="csrf" value="${csrf}">
${key}${fields}<button type="submit"${look ? html` class="${look}"` : ""}${opts.ariaLabel ? html` aria-label="${opts.ariaLabel}"` : ""}>${button}</button>
</form>`;
}

export interface FieldOptions {
  /** The input's id; by default `f-NAME`. Two forms on one page that share a field name need distinct ids. */
  id?: string;
  value?: string | null;
  type?: string;
  required?: boolean;
  hint?: string;
  autocomplete?: string;
  maxlength?: number;
  pattern?: string;
  multiline?: boolean;
  /** What is wrong with the value sent (a tool's details.issues for this field), shown beside it. */
  error?: string;
}

/** A labelled input; the hint is tied to it with aria-describedby. */
export function field(name: string, label: string, o: FieldOptions = {}): Markup {
  const id = o.id ?? `f-${name}`;
  const hint = o.hint ? html`<small id="${id}-hint" class="muted">${o.hint}</small>` : "";
  const error = o.error ? html`<small id="${id}-error" class="field-error">${o.error}</small>` : "";
  const described = [o.hint ? `${id}-hint` : "", o.error ? `${id}-error` : ""].filter(Boolean).join(" ");
  const attrs = html`id="${id}" name="${name}"${o.required ? new Markup(" required") : ""}${o.maxlength ? html` maxlength="${o.maxlength}"` : ""}${o.pattern ? html` pattern="${o.pattern}"` : ""}${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ""}${described ? html` aria-describedby="${described}"` : ""}${o.error ? new Markup(' aria-invalid="true"') : ""}`;
  const input = o.multiline
    ? html`<textarea ${attrs} rows="4">${o.value ?? ""}</textarea>`
    : html`<input ${attrs} type="${o.type ?? "text"}" value="${o.value ?? ""}">`;
  return html`<label for="${id}">${label}</label>${input}${error}${hint}`;
}

export const alert = (message: string | null | undefined) => (message ? html`<p class="error" role="alert">${message}</p>` : "");
export const notice = (message: string | null | undefined) => (message ? html`<p class="notice" role="status">${message}</p>` : "");

/** 303 See Other: the browser follows with a GET, so a reload never posts a form twice. */
export function seeOther(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { Location: location, "Cache-Control": "no-store", ...headers } });
}
