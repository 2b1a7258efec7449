// What every page handler gets: the request, one transaction, the clock's now and the browser session.
import type { AuditEntry } from "../contract/audit.ts";
import type { Tx } from "../../db/client.ts";
import type { DomainContext } from "../contract/principal.ts";
import { agentById } from "../domain/agents.ts";
import type { Services } from "../services.ts";
import { html, page, type Markup } from "./html.ts";
import type { WebSession } from "./session.ts";

export interface WebContext {
  svc: Services;
  req: Request;
  url: URL;
  /** The path's parameters by name (`group_id` of /groups/{group_id}), from the route (server/router.ts). */
  params: Readonly<Record<string, string>>;
  tx: Tx;
  now: Date;
  session: WebSession;
  /** Set-Cookie values to send with the answer. */
  cookies: string[];
  /** The submitted form of a POST (its CSRF token already checked). */
  form: URLSearchParams;
  base: string;
  secure: boolean;
  /** The view id the page's form keys were derived from when its address had none (form-keys.ts). */
  view?: string;
  /** Whether the page has forms with keys (form-keys.ts): a GET of it without a view id is redirected to one. */
  keyed?: boolean;
  /** The client's address (through trusted proxies), for limits and the audit trail. */
  clientAddress: () => string;
  /** Records an audit line, written once the page's transaction has committed (a refused step leaves none). */
  audit(entry: AuditEntry): void;
  /** Work for after the transaction commits, such as an SMS to send (never hold the writer on a gateway); a Response it returns replaces the page's. */
  afterCommit?: () => Promise<Response | undefined>;
}

/** The signed-in human as the caller of domain operations: a page acts for them as a tool acts for its caller. */
export async function actingAs(c: WebContext, agentId: string): Promise<DomainContext> {
  return { tx: c.tx, now: c.now, actor: (await agentById(c.tx, agentId))! };
}

/** Pages a sign-in returns to: a fixed list, so no address is ever taken from the request. */
export const FLOWS = { join: "/join", account: "/account", authorize: "/oauth/consent", groups: "/groups" } as const;
export type Flow = keyof typeof FLOWS;
export const isFlow = (v: string | null): v is Flow => v !== null && Object.hasOwn(FLOWS, v);

/**
 * The one rule for a page a sign-up or sign-in returns to when a link asked (`/signup?next=/claim/...`, as the claim
 * page links): a path of this server only, starting with a single `/`: never `//`, a scheme, a backslash, a space or
 * a control character, at most 2,000 characters. Anything else is null, and the usual page follows. The path travels
 * in the link and in the forms' hidden `next` field, never in the session (a GET never writes).
 */
export function returnPath(value: string | null | undefined): string | null {
  if (!value || value.length > 2000 || !/^\/(?!\/)[^\\\s\p{Cc}]*$/u.test(value)) return null;
  const origin = "http://svc.invalid";
  return new URL(value, origin).origin === origin ? value : null;
}

/** The safe return path a page was asked for: the form's `next` field (a POST), else the address's `?next=`. */
export const nextOf = (c: WebContext): string | null => returnPath(c.form.get("next") ?? c.url.searchParams.get("next"));

/** The hidden field that carries the return path through a sign-up or sign-in form (nothing without one). */
export const nextField = (c: WebContext): Markup => {
  const next = nextOf(c);
  return next ? html`<input type="hidden" name="next" value="${next}">` : html``;
};

/** A link to a page (/signup, /signin, /account) that keeps the return path. */
export const withNext = (path: string, next: string | null): string =>
  next ? `${path}${path.includes("?") ? "&" : "?"}next=${encodeURIComponent(next)}` : path;

export interface Messages {
  error?: string;
  info?: string;
  status?: number;
}

export function errorPage(title: string, message: string, status: number, extra: Markup | string = ""): Response {
  return page(title, html`<p class="error" role="alert">${message}</p>${extra}`, { status, same: true });
}

/** Any address with nothing here, and any object the signed-in human may not see: the same page, so it tells nothing. */
export const notFoundPage = () =>
  errorPage("Not found", "There is no page here.", 404, html`<p><a href="/">Home</a> · <a href="/account">Your account</a></p>`);

/**
 * A moment on a page: a <time> element in UTC, which the page's script (local-time.js) shows in the reader's own
 * time zone; without script it reads "2026-11-22 12:00 UTC".
 */
export const formatTime = (isoTime: string | null): Markup | string =>
  isoTime ? html`<time datetime="${isoTime}">${isoTime.replace("T", " ").slice(0, 16)} UTC</time>` : "never";
