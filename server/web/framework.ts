// The web layer's framework: how a page, a form and an action run (the pages are server/web/*-page.ts; their routes
// are in server/routes.ts). A page runs in one read transaction with the browser's session; a form that is the
// person's own (sign-in, session, e-mail address) in one write transaction; an action (everything a person does on
// the ledger, contacts, inbox, mail and plans) as tool calls through invoke() with the browser's session as its
// credential (toolForm: one call, then PRG or the form again with the tool's errors beside its fields). Every POST
// needs the session's CSRF token and is rate limited by address.
import type { AuditEntry } from "../contract/audit.ts";
import { NeedsWrite, type Tx } from "../../db/client.ts";
import { Uuid } from "../contract/wire.ts";
import { AppError } from "../errors.ts";
import type { Params } from "../router.ts";
import type { CallResult, Services } from "../services.ts";
import { invoke } from "../tools/invoke.ts";
import { unseenCount } from "../domain/inbox.ts";
import { errorPage, notFoundPage, type Messages, type WebContext } from "./context.ts";
import { shownAgainAt, withView } from "./form-keys.ts";
import { html, reader, seeOther } from "./html.ts";
import { anonymousCookie, csrfValid, mayWrite, openSession, readCookie, SESSION_COOKIE, signedIn, type Access } from "./session.ts";
import { offlineMark } from "./webapp.ts";
import { errorText, issuesByField } from "./wording.ts";

export type { Params };

const MAX_FORM_BYTES = 64 * 1024;

/** A page: what it shows, from its context (the request, its path's parameters, the session, a transaction). */
export type Page = (c: WebContext) => Promise<Response>;
/** What an action does with its tool calls. */
export type Act = (a: ActionContext) => Promise<Response>;

/** What a page's route is handed (server/routes.ts): the request, and the client's address when a limit needs it. */
export interface WebCall {
  svc: Services;
  req: Request;
  path: string;
  clientAddress: () => string;
}
/** A route of the web's: its request, and the path's parameters by name (server/router.ts). */
export type WebRoute = (c: WebCall, params: Params) => Promise<Response> | Response;

/** GET of a page, in a read transaction with the browser's session; the path's parameters are in c.params. */
export const page =
  (run: Page): WebRoute =>
  (c, params) =>
    inSession(c, new URL(c.req.url), null, run, false, params);

/** A page with a secret in the path (a claim code): each look counts against the address like a form, so none is guessed in bulk. */
export const secretPage =
  (run: Page): WebRoute =>
  (c, params) =>
    rateLimited(c.svc, c.clientAddress()) ?? page(run)(c, params);

/**
 * POST of a form: rate limited by address, then run in a write transaction with the session's CSRF token checked.
 * writes: it acts as the signed-in human, so a browser signed in through a read-only credential may not send it.
 */
export const form =
  (run: Page, writes = false): WebRoute =>
  async (c, params) => {
    const limited = rateLimited(c.svc, c.clientAddress());
    if (limited) return limited;
    const body = await readForm(c.req);
    if (!body) return errorPage("Cannot read the form", "The form could not be read; go back and try again.", 400);
    return inSession(c, new URL(c.req.url), body, run, writes, params);
  };

/** What an action (a form that performs a tool call) is handed. */
export interface ActionContext {
  svc: Services;
  req: Request;
  /** The path's parameters by name (`group_id` of /groups/{group_id}/...). */
  params: Params;
  form: URLSearchParams;
  /** The files of a multipart form (uploadAction), by field name. */
  files: Map<string, File>;
  /** The signed-in human. */
  agentId: string;
  /**
   * Calls a tool as this browser's client, through invoke(): the same validation, scopes, idempotency (the form's
   * key), inbox effects and errors as over REST and MCP. Never inside a page's transaction: the call has its own.
   * idempotencyKey: for a form that makes several calls, each call's own key derived from the form's (formKeyFor).
   */
  call(tool: string, args: Record<string, unknown>, idempotencyKey?: string): Promise<CallResult>;
  /** The page again (a read), e.g. with the call's error beside its fields. */
  show(render: Page): Promise<Response>;
}

/**
 * POST of a form that acts through a tool: rate limited by address, its CSRF token and the sign-in checked in a read
 * transaction, then `run` with the tool calls it makes. No page writes to the database around the tools: the
 * browser's session secret is its credential for invoke() (kind web, its scopes), so a read-only or ended browser
 * is refused there as any client would be. A browser not signed in is sent to sign in.
 */
export const action = (run: Act, signInAt = "/account", access: Access = "full"): WebRoute =>
  actionReading(
    async (req) => {
      const form = await readForm(req);
      return form && { form, files: new Map() };
    },
    run,
    signInAt,
    access,
  );

/**
 * action() for a form that sends a file (multipart/form-data, such as a receipt): its text fields are the form, its
 * files are handed beside them; a body past `maxBytes` is refused unread.
 */
export const uploadAction =
  (maxBytes: (svc: Services) => number, run: Act): WebRoute =>
  (c, params) =>
    actionReading((req) => readMultipart(req, maxBytes(c.svc)), run, "/groups", "full")(c, params);

async function readMultipart(req: Request, maxBytes: number): Promise<{ form: URLSearchParams; files: Map<string, File> } | null> {
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const length = Number(req.headers.get("content-length") ?? "NaN");
  if (type !== "multipart/form-data" || !(length <= maxBytes)) {
    await req.body?.cancel().catch(() => undefined);
    return null;
  }
  let data: FormData;
  try {
    data = await req.formData();
  } catch {
    return null;
  }
  const form = new URLSearchParams();
  const files = new Map<string, File>();
  for (const [name, value] of data) {
    if (typeof value === "string") form.append(name, value);
    else files.set(name, value);
  }
  return { form, files };
}

function actionReading(
  read: (req: Request) => Promise<{ form: URLSearchParams; files: Map<string, File> } | null>,
  run: Act,
  signInAt: string,
  access: Access,
): WebRoute {
  return async (c, params) => {
    const limited = rateLimited(c.svc, c.clientAddress());
    if (limited) return limited;
    const sent = await read(c.req);
    if (!sent) return errorPage("Cannot read the form", "The form could not be read (or what it sent is too large); go back and try again.", 400);
    const body = sent.form;
    const url = new URL(c.req.url);
    const now = c.svc.config.clock.now();
    const checked = await c.svc.db.read(async (tx) => {
      const { session, newToken } = await openSession(tx, c.req, now, c.svc.formKey);
      if (newToken || !csrfValid(session, body)) return csrfRefused();
      return signedIn(session, access) ? session : seeOther(signInAt);
    });
    if (checked instanceof Response) return checked;
    const token = readCookie(c.req, SESSION_COOKIE)!;
    return run({
      svc: c.svc,
      req: c.req,
      params,
      form: body,
      files: sent.files,
      agentId: checked.agentId,
      call: async (tool, args, idempotencyKey) =>
        sentBefore(
          await invoke(c.svc, tool, args, {
            requestId: crypto.randomUUID(),
            token,
            page: true,
            // A form sent without its key (not from a page of this server) is done each time it is sent.
            idempotencyKey: idempotencyKey ?? body.get("idempotency_key") ?? crypto.randomUUID(),
            clientAddress: c.clientAddress,
          }),
        ),
      show: (render) => inSession(c, shownAgainAt(url, body), null, render, false, params),
    });
  };
}

/**
 * A form's key already used for other values: the form was sent, then sent again changed (after Back, whose page
 * keeps its keys: form-keys.ts). Nothing was done the second time; said so in the page's words.
 */
function sentBefore(result: CallResult): CallResult {
  if (result.ok || result.error.code !== "IDEMPOTENCY_KEY_REUSED") return result;
  const message =
    "This form was already sent from this page (perhaps you went back to it), so it was not done again with the changes. To make a new one, open the page afresh from its link rather than with Back.";
  return { ...result, error: new AppError("IDEMPOTENCY_KEY_REUSED", message, result.error.details) };
}

/** A form that needs the client's address (password guesses and text messages are limited per address too). */
export const formWithAddress =
  (run: (c: WebContext, address: string) => Promise<Response>, writes = false): WebRoute =>
  (c, params) =>
    form((w) => run(w, c.clientAddress()), writes)(c, params);

/**
 * POST of a form with slow work that needs no database (a password's argon2id hash or check, a quarter of a second
 * and more): no transaction is open while it runs, so no write waits for it. `before` runs like a form's page, in a
 * short write transaction with the session (CSRF checked), and returns what the work needs, or the answer itself;
 * `work` runs outside any transaction; `after` runs in another short write transaction and must check that what
 * `before` read still holds. `before` may not renew the session's cookie (`after` opens the session from the request's).
 * address: the client's address (password guesses are limited per address too).
 */
export const slowForm =
  <P, R>(
    before: (c: WebContext, address: string) => Promise<P | Response>,
    work: (p: P) => Promise<R>,
    after: (c: WebContext, p: P, r: R, address: string) => Promise<Response>,
    writes = false,
  ): WebRoute =>
  async (c, params) => {
    const limited = rateLimited(c.svc, c.clientAddress());
    if (limited) return limited;
    const body = await readForm(c.req);
    if (!body) return errorPage("Cannot read the form", "The form could not be read; go back and try again.", 400);
    const url = new URL(c.req.url);
    const address = c.clientAddress();
    const held: { p?: P } = {};
    const first = await inSession(
      c,
      url,
      body,
      async (w) => {
        delete held.p;
        const p = await before(w, address);
        if (p instanceof Response) return p;
        held.p = p;
        return new Response(null, { status: 204 });
      },
      writes,
      params,
    );
    if (!("p" in held)) return first;
    const p = held.p as P;
    const result = await work(p);
    const res = await inSession(c, url, body, (w) => after(w, p, result, address), writes, params);
    for (const cookie of first.headers.getSetCookie()) res.headers.append("Set-Cookie", cookie);
    return res;
  };

/** An OAuth endpoint for machines (register, token, revoke): POST, with CORS preflight. */
export const machine =
  (run: (svc: Services, req: Request, address: string) => Promise<Response>): WebRoute =>
  (c) =>
    run(c.svc, c.req, c.clientAddress());

export const takesPost: WebRoute = () => errorPage("Not here", "This endpoint takes POST.", 405);

export function rateLimited(svc: Services, address: string): Response | null {
  const decision = svc.limiter.take(`web:${address}`, "web", svc.config.publicRateLimit);
  if (decision.allowed) return null;
  const res = errorPage("Slow down", `Too many attempts from your address. Wait ${decision.resetSeconds} seconds and try again.`, 429);
  res.headers.set("Retry-After", String(decision.resetSeconds));
  return res;
}

async function readForm(req: Request): Promise<URLSearchParams | null> {
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return null;
  const text = await req.text();
  return text.length > MAX_FORM_BYTES ? null : new URLSearchParams(text);
}

/** Where a page's request came from: the server's services, the request and the client's address (for the audit log). */
export type Caller = Pick<WebCall, "svc" | "req" | "clientAddress">;

/**
 * Runs a page in one transaction with the browser's session (a new anonymous one when it has none).
 * A POST whose CSRF token is not the session's is refused before the page runs.
 */
export async function inSession(at: Caller, url: URL, form: URLSearchParams | null, run: Page, writes = false, params: Params = {}): Promise<Response> {
  const { svc, req } = at;
  const now = svc.config.clock.now();
  const secure = svc.config.baseUrl.startsWith("https://");
  try {
    // A GET runs in a read transaction: it never writes (a page that must, such as /oauth/authorize, asks for a write
    // one and runs again, as a tool does).
    const run_ = async (tx: Tx) => {
      const cookies: string[] = [];
      const { session, newToken } = await openSession(tx, req, now, svc.formKey);
      if (newToken) {
        if (form) return { res: csrfRefused(), cookies };
        cookies.push(anonymousCookie(newToken, secure, now));
      }
      if (form && !csrfValid(session, form)) return { res: csrfRefused(), cookies };
      if (form && writes && signedIn(session, "settings") && !mayWrite(session)) return { res: readOnlyRefused(), cookies };
      const audits: AuditEntry[] = [];
      const c: WebContext = {
        svc,
        req,
        url,
        params,
        tx,
        now,
        session,
        cookies,
        form: form ?? new URLSearchParams(),
        base: svc.config.baseUrl,
        secure,
        clientAddress: at.clientAddress,
        audit: (entry) => audits.push(entry),
      };
      // What the nav says of the reader's inbox, for every page this answers (html.ts reader).
      const unseen = signedIn(session) ? await unseenCount(tx, session.agentId, now) : 0;
      const res = withView(c, await reader.run({ unseen }, () => run(c)));
      return { res, cookies: c.cookies, afterCommit: c.afterCommit, audits, session: c.session };
    };
    const {
      res: shown,
      cookies,
      afterCommit,
      audits,
      session,
    } = form
      ? await svc.db.tx(run_)
      : await svc.db.read(run_).catch((err) => {
          if (err instanceof NeedsWrite) return svc.db.tx(run_);
          throw err;
        });
    for (const entry of audits ?? []) svc.audit?.(entry, at.clientAddress());
    // Whether the service worker may keep this page for reading offline, or must forget what it kept (webapp.ts).
    const res = offlineMark((await afterCommit?.()) ?? shown, req, url.pathname, session ?? null, svc.formKey);
    for (const cookie of cookies) res.headers.append("Set-Cookie", cookie);
    // Every 401 carries the Bearer challenge (interface.md); the page itself shows the browser how to sign in.
    if (res.status === 401 && !res.headers.has("WWW-Authenticate")) {
      res.headers.set("WWW-Authenticate", `Bearer realm="svc", resource_metadata="${svc.config.baseUrl}/.well-known/oauth-protected-resource"`);
    }
    return res;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    // An object the human may not see looks like no page at all.
    if (err.code === "NOT_FOUND") return notFoundPage();
    // Nothing of a refused step was kept (the transaction rolled back); the message is the server's own.
    return errorPage("Cannot do that", errorText(err), err.status, html`<p>Go back and try again.</p>`);
  }
}

const readOnlyRefused = () =>
  errorPage(
    "Read-only",
    "This browser was signed in through a read-only credential, so it can look but not change anything. Sign in on your account page to make changes.",
    403,
    html`<p><a href="/account">Your account</a></p>`,
  );

const csrfRefused = () =>
  errorPage("Form expired", "This form was not sent from this site's page, or the page is too old. Reload the page and try again.", 403);

/** A page shown again after a refused form: which form, the values sent, and the tool's issues by field. */
export interface FormMessages extends Messages {
  form?: string;
  values?: URLSearchParams;
  issues?: Record<string, string>;
}

/**
 * The one way a form acts: one tool call as the browser's client. Done, a 303 to where `done` says (a reload repeats
 * nothing); refused, the page again (`show`) with the tool's message and each issue beside its field. A path whose
 * ids are not ids is the 404 page, as for any address.
 */
export function toolForm(opts: {
  tool: string;
  /** Which of the page's forms this is, so only its fields are shown again with the errors. */
  form: string;
  args: (f: URLSearchParams, params: Params) => Record<string, unknown>;
  done: (data: Record<string, any>, params: Params, f: URLSearchParams) => string;
  show: (c: WebContext, m: FormMessages) => Promise<Response>;
}): Act {
  return async (a) => {
    if (Object.entries(a.params).some(([name, value]) => name.endsWith("_id") && !Uuid.safeParse(value).success)) return notFoundPage();
    const result = await a.call(opts.tool, opts.args(a.form, a.params));
    if (result.ok) return seeOther(opts.done(result.data, a.params, a.form));
    const err = result.error;
    // An object the person may not see is NOT_FOUND again when the page is read: the 404 page, as for any address.
    return a.show((c) => opts.show(c, { error: errorText(err), status: err.status, form: opts.form, values: a.form, issues: issuesByField(err) }));
  };
}
