// How human pages and OAuth endpoints run (their routes are in server/routes.ts). Pages run in one transaction with
// the browser session; every POST needs the session's CSRF token; the OpenID Connect steps talk to the provider
// outside any transaction.
import type { AuditEntry } from "../contract/audit.ts";
import { ClientMetadataError, isClientIdUrl, refreshMetadataClient } from "../auth/client-metadata.ts";
import * as endpoints from "../auth/oauth-endpoints.ts";
import { startOidc } from "../auth/oidc.ts";
import { NeedsWrite, type Tx } from "../../db/client.ts";
import { AppError } from "../errors.ts";
import type { CallResult, Services } from "../services.ts";
import { renderAccount } from "./account-page.ts";
import { authorize, renderConsent } from "./consent-page.ts";
import { FLOWS, errorPage, isFlow, notFoundPage, returnPath, type Flow, type Messages, type WebContext } from "./context.ts";
import { renderDashboard } from "./dashboard-page.ts";
import { renderDocs } from "./docs-page.ts";
import { renderGroups } from "./groups-page.ts";
import { renderHome, wantsHtml } from "./home-page.ts";
import { html, reader, seeOther } from "./html.ts";
import { unseenCount } from "../domain/inbox.ts";
import { errorText } from "./wording.ts";
import { renderJoin } from "./join-page.ts";
import { anonymousCookie, csrfValid, mayWrite, openSession, readCookie, SESSION_COOKIE, signedIn, updateSession, type Access } from "./session.ts";
import { invoke } from "../tools/invoke.ts";
import { applyIdentity, checkCallback, exchangeAtProvider } from "./signin.ts";
import { shownAgainAt, withView } from "./form-keys.ts";
import { offlineMark } from "./webapp.ts";

const MAX_FORM_BYTES = 64 * 1024;

type Page = (c: WebContext) => Promise<Response>;

/** What a page's route is handed (server/routes.ts): the request, and the client's address when a limit needs it. */
export interface WebCall {
  svc: Services;
  req: Request;
  path: string;
  clientAddress: () => string;
}
type WebRoute = (c: WebCall, param: string) => Promise<Response> | Response;

const RENDER_FLOW: Record<Flow, (c: WebContext, m: Messages) => Promise<Response>> = {
  join: renderJoin,
  authorize: renderConsent,
  account: renderAccount,
  groups: renderGroups,
};
/** The page a sign-in form of `flow` is on, shown again with what a refused step says. */
export const renderFlow = (c: WebContext, flow: Flow, m: Messages) => RENDER_FLOW[flow](c, m);

const WEB_AREAS = ["/join", "/account", "/settings", "/groups", "/docs", "/signup", "/signin", "/contacts", "/inbox", "/plans", "/envelopes", "/claim"];

/** Whether a path nobody answers is a missing page (HTML) rather than a missing API endpoint (JSON); `/` only for a browser. */
export const isWebPath = (req: Request, path: string) =>
  WEB_AREAS.some((area) => path === area || path.startsWith(`${area}/`)) ||
  path.startsWith("/oauth/") ||
  path === "/.well-known/jwks.json" ||
  (path === "/" && wantsHtml(req));

/** GET of a page, in a read transaction with the browser's session. */
export const page =
  (run: Page): WebRoute =>
  (c) =>
    inSession(c, new URL(c.req.url), null, run);

/** GET of a page about the object named in the path (a group, a link token). */
export const pageOf =
  (run: (c: WebContext, param: string) => Promise<Response>): WebRoute =>
  (c, param) =>
    inSession(c, new URL(c.req.url), null, (w) => run(w, param));

/** pageOf for a secret in the path (a claim code): each look counts against the address like a form, so none is guessed in bulk. */
export const secretPageOf =
  (run: (c: WebContext, param: string) => Promise<Response>): WebRoute =>
  (c, param) =>
    rateLimited(c.svc, c.clientAddress()) ?? pageOf(run)(c, param);

/**
 * POST of a form: rate limited by address, then run in a write transaction with the session's CSRF token checked.
 * writes: it acts as the signed-in human, so a browser signed in through a read-only credential may not send it.
 */
export const form =
  (run: Page, writes = false): WebRoute =>
  async (c) => {
    const limited = rateLimited(c.svc, c.clientAddress());
    if (limited) return limited;
    const body = await readForm(c.req);
    if (!body) return errorPage("Cannot read the form", "The form could not be read; go back and try again.", 400);
    return inSession(c, new URL(c.req.url), body, run, writes);
  };

/** What an action (a form that performs a tool call) is handed. */
export interface ActionContext {
  svc: Services;
  req: Request;
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
export const action = (run: (a: ActionContext, param: string) => Promise<Response>, signInAt = "/account", access: Access = "full"): WebRoute =>
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
  (maxBytes: (svc: Services) => number, run: (a: ActionContext, param: string) => Promise<Response>): WebRoute =>
  (c, param) =>
    actionReading((req) => readMultipart(req, maxBytes(c.svc)), run, "/groups", "full")(c, param);

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
  run: (a: ActionContext, param: string) => Promise<Response>,
  signInAt: string,
  access: Access,
): WebRoute {
  return async (c, param) => {
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
    return run(
      {
        svc: c.svc,
        req: c.req,
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
        show: (render) => inSession(c, shownAgainAt(url, body), null, render),
      },
      param,
    );
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
  (c, param) =>
    form((w) => run(w, c.clientAddress()), writes)(c, param);

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
  async (c) => {
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
    );
    if (!("p" in held)) return first;
    const p = held.p as P;
    const result = await work(p);
    const res = await inSession(c, url, body, (w) => after(w, p, result, address), writes);
    for (const cookie of first.headers.getSetCookie()) res.headers.append("Set-Cookie", cookie);
    return res;
  };

/**
 * A form of the sign-in steps, which show the page of the flow being signed in to (join, consent, account, groups);
 * with the client's address, which text messages are limited by.
 */
export const signInForm = (step: (c: WebContext, render: typeof renderFlow, address: string) => Promise<Response>): WebRoute =>
  formWithAddress((w, address) => step(w, renderFlow, address));

/** An OAuth endpoint for machines (register, token, revoke): POST, with CORS preflight. */
export const machine =
  (run: (svc: Services, req: Request, address: string) => Promise<Response>): WebRoute =>
  (c) =>
    run(c.svc, c.req, c.clientAddress());
export const preflight: WebRoute = () => endpoints.preflight();
export const takesPost: WebRoute = () => errorPage("Not here", "This endpoint takes POST.", 405);

export const jwks: WebRoute = (c) => endpoints.jwks(c.svc);
// The home page and the documentation are the same for everyone: no session is made for them.
// A browser that has a session cookie is looked up: signed in, its `/` is the dashboard.
export const home: WebRoute = (c) =>
  readCookie(c.req, SESSION_COOKIE)
    ? inSession(c, new URL(c.req.url), null, async (w) => (signedIn(w.session) ? renderDashboard(w, w.session) : renderHome(c.svc.config.baseUrl)))
    : offlineMark(renderHome(c.svc.config.baseUrl), c.req, "/", null, c.svc.formKey);
export const docs: WebRoute = (c) => renderDocs(c.svc.config.baseUrl, c.path);

/** GET /account/oidc/start and /callback: both make the server talk to the provider, so they count like a form. */
export const oidc =
  (step: typeof oidcStart): WebRoute =>
  (c) => {
    const limited = rateLimited(c.svc, c.clientAddress());
    return limited ?? step(c, new URL(c.req.url));
  };

/** GET /oauth/authorize. */
export const authorizePage: WebRoute = (c) => authorizeRequest(c, new URL(c.req.url), c.clientAddress());

function rateLimited(svc: Services, address: string): Response | null {
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

/**
 * Runs a page in one transaction with the browser's session (a new anonymous one when it has none).
 * A POST whose CSRF token is not the session's is refused before the page runs.
 */
/** Where a page's request came from: the server's services, the request and the client's address (for the audit log). */
type Caller = Pick<WebCall, "svc" | "req" | "clientAddress">;

async function inSession(at: Caller, url: URL, form: URLSearchParams | null, run: Page, writes = false): Promise<Response> {
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

/**
 * GET /oauth/authorize. A client_id that is a URL has its metadata document fetched (when the stored copy is stale)
 * before the page's transaction.
 */
async function authorizeRequest(at: Caller, url: URL, address: string): Promise<Response> {
  const { svc } = at;
  // The one GET that stores a session (the request waits in it while the human signs in): it counts like a form.
  const limited = rateLimited(svc, address);
  if (limited) return limited;
  const clientId = url.searchParams.get("client_id");
  if (clientId && isClientIdUrl(clientId)) {
    try {
      await refreshMetadataClient(svc, clientId);
    } catch (err) {
      if (!(err instanceof ClientMetadataError)) throw err;
      // Never redirect: without a usable document the redirect URI cannot be trusted.
      return errorPage("Cannot continue", err.message, 400, html`<p>Nothing was shared. Go back to the app and try again.</p>`);
    }
  }
  return inSession(at, url, null, authorize);
}

/** GET /account/oidc/start?flow=...: asks the provider (outside any transaction), then remembers the sign-in. */
export async function oidcStart(at: Caller, url: URL): Promise<Response> {
  const { svc } = at;
  const flow = url.searchParams.get("flow");
  if (!svc.config.oidc) return errorPage("Not available", "No identity provider is configured on this server.", 404);
  if (!isFlow(flow)) return errorPage("Cannot sign in", "This sign-in link is incomplete; start from the page again.", 400);
  let started: Awaited<ReturnType<typeof startOidc>>;
  try {
    started = await startOidc(svc.config.oidc, svc.config.baseUrl, flow);
  } catch (err) {
    console.error("OpenID Connect discovery failed:", err instanceof Error ? err.message : err);
    return errorPage("Cannot sign in", "The identity provider cannot be reached right now. Try again later, or sign in with your handle.", 502);
  }
  return inSession(at, url, null, async (c) => {
    const next = returnPath(url.searchParams.get("next"));
    c.session = await updateSession(c.tx, c.session, { oidcFlow: { ...started.state, ...(next ? { next } : {}) } });
    return seeOther(started.url);
  });
}

/** GET /account/oidc/callback: the pending sign-in is used up, the code exchanged with the provider, then applied. */
export async function oidcCallback(at: Caller, url: URL): Promise<Response> {
  const { svc } = at;
  if (!svc.config.oidc) return errorPage("Not available", "No identity provider is configured on this server.", 404);
  let checked = { error: "" } as ReturnType<typeof checkCallback>;
  await inSession(at, url, null, async (c) => {
    checked = checkCallback(c.session, url);
    if (c.session.oidcFlow) c.session = await updateSession(c.tx, c.session, { oidcFlow: null });
    return new Response(null);
  });
  if ("error" in checked) return errorPage("Cannot sign in", checked.error, 400);
  const { flow, code } = checked;
  const identity = await exchangeAtProvider(svc, flow, code, svc.config.clock.now());
  if ("error" in identity) return errorPage("Cannot sign in", identity.error, 502);
  return inSession(at, url, null, async (c) => {
    await applyIdentity(c, identity);
    return seeOther(returnPath(flow.next) ?? (isFlow(flow.flow) ? FLOWS[flow.flow] : "/account"));
  });
}
