// The idempotency keys of a page's forms, made to survive the Back button. Pages are never stored by the browser
// (Cache-Control: no-store), so Back fetches the page again: a key drawn at random at each rendering would come back
// new, and the form sent again (an expense, a payment) would be done again. So each view of a page has an id in its
// address (?view=...): a GET of a page whose forms carry keys, without one, is redirected to the same address with a
// fresh one, and each form's key is derived from it and from what the form does. Back, and a reload, ask for that
// same address: the page comes back with the same keys, and a form sent again is replayed (invoke()'s idempotency),
// never done twice. A page opened afresh (a link, the redirect after a form) gets a new id, so new forms. An id
// lasts an hour: an address kept longer (a bookmark, the address bar's history) opens a new view, so its forms are
// not taken for ones sent before.
import { createHash, randomBytes } from "node:crypto";
import { HOUR, MINUTE } from "../clock.ts";
import type { WebContext } from "./context.ts";
import { seeOther } from "./html.ts";

export const VIEW_PARAM = "view";
/** How long a view id's keys are its forms' keys (Back, a reload); past it the address gets a new one. */
export const VIEW_LIFETIME_MS = HOUR;
// 22 characters of 16 random bytes, then the minute it was made (base 36).
const VIEW = /^[A-Za-z0-9_-]{22}([0-9a-z]{1,10})$/;

const newView = (now: Date) => `${randomBytes(16).toString("base64url")}${Math.floor(now.getTime() / MINUTE).toString(36)}`;

/** The page view's id in an address, when it is one this server made, less than VIEW_LIFETIME_MS ago. */
export function viewOf(url: URL, now: Date): string | null {
  const view = url.searchParams.get(VIEW_PARAM);
  const made = view?.match(VIEW)?.[1];
  if (!view || made === undefined) return null;
  const age = now.getTime() - Number.parseInt(made, 36) * MINUTE;
  return age >= -MINUTE && age < VIEW_LIFETIME_MS ? view : null;
}

/** The view id a form's key was derived from (formKey's keys are `<view>.<digest>`), if it is one. */
export function viewOfKey(key: string | null | undefined): string | null {
  const view = key?.split(".")[0];
  return view && VIEW.test(view) ? view : null;
}

/**
 * The idempotency key of one of the page's forms: the same for every rendering of this view of the page (its
 * address's view id), this browser session, and `about`, which names what the form does (its action, and the
 * object or choice it carries when one page has several forms to one action).
 */
export function formKey(c: WebContext, about: string): string {
  const view = viewOf(c.url, c.now) ?? (c.view ??= newView(c.now));
  c.keyed = true;
  const digest = createHash("sha256").update(`${view}\n${c.session.csrfToken}\n${about}`).digest("base64url");
  return `${view}.${digest}`;
}

/**
 * A page's answer to a GET: a page whose forms carry keys, asked for without a view id, is a 303 to the same address
 * with one (the page is then asked for again, with it). Anything else as it is.
 */
export function withView(c: WebContext, res: Response): Response {
  if (c.req.method !== "GET" || !c.keyed || !c.view || viewOf(c.url, c.now) || res.status !== 200) return res;
  const url = new URL(c.url);
  url.searchParams.set(VIEW_PARAM, c.view);
  return seeOther(`${url.pathname}${url.search}${url.hash}`);
}

/**
 * The address a page refused by a tool is shown again at (the form's own POST address): with the view id of the form
 * sent, so every form of the page comes back with the keys it had, the one sent too. Its next send, corrected, is
 * then the same key, and Back to the page it came from still replays it. (A view past its hour gives new keys.)
 */
export function shownAgainAt(url: URL, form: URLSearchParams): URL {
  const view = viewOfKey(form.get("idempotency_key"));
  if (!view) return url;
  const again = new URL(url);
  again.searchParams.set(VIEW_PARAM, view);
  return again;
}
