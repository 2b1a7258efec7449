// Every human page and OAuth endpoint, in one list. Pages run in one transaction with the browser session;
// every POST needs the session's CSRF token; the OpenID Connect steps talk to the provider outside any transaction.
import { ClientMetadataError, isClientIdUrl, refreshMetadataClient } from "../auth/client-metadata.ts";
import * as endpoints from "../auth/oauth-endpoints.ts";
import { startOidc } from "../auth/oidc.ts";
import { NeedsWrite, type Tx } from "../../db/client.ts";
import { AppError } from "../errors.ts";
import type { Services } from "../services.ts";
import { renderAccount, postCreateKey, postDisconnect } from "./account-page.ts";
import { authorize, postConsent, postSignup, renderConsent } from "./consent-page.ts";
import { FLOWS, errorPage, isFlow, notFoundPage, type Flow, type Messages, type WebContext } from "./context.ts";
import { renderDocs } from "./docs-page.ts";
import { exportCsv, renderGroup, renderGroups } from "./groups-page.ts";
import { renderHome, wantsHtml } from "./home-page.ts";
import { html, seeOther } from "./html.ts";
import { postApprove, postCreate, postDeny, postUserCode, renderJoin } from "./join-page.ts";
import { postMerge, renderMerge } from "./merge-page.ts";
import { anonymousCookie, csrfValid, mayWrite, openSession, signedIn, updateSession } from "./session.ts";
import { postSettings, postSettingsLink, renderSettings, renderSettingsLink } from "./settings-page.ts";
import { applyIdentity, checkCallback, exchangeAtProvider, postSendCode, postSignOut, postVerifyCode } from "./signin.ts";

const MAX_FORM_BYTES = 64 * 1024;

type Page = (c: WebContext) => Promise<Response>;

const RENDER_FLOW: Record<Flow, (c: WebContext, m: Messages) => Promise<Response>> = {
  join: renderJoin,
  authorize: renderConsent,
  account: renderAccount,
  groups: renderGroups,
};
const renderFlow = (c: WebContext, flow: Flow, m: Messages) => RENDER_FLOW[flow](c, m);

const GET_PAGES: Record<string, Page> = {
  "/join": (c) => renderJoin(c),
  "/account": (c) => renderAccount(c),
  "/account/merge": renderMerge,
  "/settings": (c) => renderSettings(c),
  "/oauth/consent": (c) => renderConsent(c),
  "/groups": (c) => renderGroups(c),
};

const POST_PAGES: Record<string, Page> = {
  "/join": postUserCode,
  "/join/approve": postApprove,
  "/join/deny": postDeny,
  "/join/create": postCreate,
  "/account/signin/code": (c) => postSendCode(c, renderFlow),
  "/account/signin/verify": (c) => postVerifyCode(c, renderFlow),
  "/account/signout": postSignOut,
  "/account/keys": postCreateKey,
  "/account/clients/disconnect": postDisconnect,
  "/account/merge": postMerge,
  "/settings": postSettings,
  "/settings/link": postSettingsLink,
  "/oauth/consent": postConsent,
  "/oauth/signup": postSignup,
};

/** Forms that act as the signed-in human: a browser signed in through a read-only credential may not send them. */
const WRITE_PAGES = new Set(["/join/approve", "/account/keys", "/account/clients/disconnect", "/account/merge", "/settings", "/oauth/consent"]);

const WEB_AREAS = ["/join", "/account", "/settings", "/groups", "/docs"];

/** Whether app.ts should hand a request to handleWeb; `/` is a page only for a browser (API clients get JSON). */
export const isWebRequest = (req: Request, path: string) =>
  WEB_AREAS.some((area) => path === area || path.startsWith(`${area}/`)) ||
  path.startsWith("/oauth/") ||
  path === "/.well-known/jwks.json" ||
  (path === "/" && wantsHtml(req));

/** /groups/{group_id} and /groups/{group_id}/export.csv */
const GROUP_PAGE = /^\/groups\/([^/]+)(\/export\.csv)?$/;

export async function handleWeb(svc: Services, req: Request, path: string, address: string): Promise<Response> {
  const method = req.method === "HEAD" ? "GET" : req.method;
  if (path === "/.well-known/jwks.json" && method === "GET") return endpoints.jwks(svc);
  const machine = { "/oauth/register": endpoints.register, "/oauth/token": endpoints.token, "/oauth/revoke": endpoints.revoke }[path];
  if (machine) {
    if (method === "OPTIONS") return endpoints.preflight();
    if (method === "POST") return machine(svc, req, address);
    return errorPage("Not here", "This endpoint takes POST.", 405);
  }
  const url = new URL(req.url);
  // The home page and the documentation are the same for everyone: no session is made for them.
  if (method === "GET" && path === "/") return renderHome(svc.config.baseUrl);
  if (method === "GET" && (path === "/docs" || path.startsWith("/docs/"))) return renderDocs(svc.config.baseUrl, path);
  const groupPage = method === "GET" ? GROUP_PAGE.exec(path) : null;
  if (groupPage) {
    const groupId = groupPage[1]!;
    return inSession(svc, req, url, null, (c) => (groupPage[2] ? exportCsv(c, groupId) : renderGroup(c, groupId)));
  }
  if (method === "GET" && (path === "/account/oidc/start" || path === "/account/oidc/callback")) {
    // Both make the server talk to the provider, so they count against the address like a form.
    const limited = rateLimited(svc, address);
    if (limited) return limited;
    return path === "/account/oidc/start" ? oidcStart(svc, req, url) : oidcCallback(svc, req, url);
  }
  if (method === "GET" && path.startsWith("/settings/link/")) {
    const token = path.slice("/settings/link/".length);
    return inSession(svc, req, url, null, (c) => renderSettingsLink(c, token));
  }
  if (method === "GET" && path === "/oauth/authorize") return authorizeRequest(svc, req, url, address);
  const get = method === "GET" ? GET_PAGES[path] : undefined;
  if (get) return inSession(svc, req, url, null, get);
  const post = method === "POST" ? POST_PAGES[path] : undefined;
  if (!post) return notFoundPage();
  const limited = rateLimited(svc, address);
  if (limited) return limited;
  const form = await readForm(req);
  if (!form) return errorPage("Cannot read the form", "The form could not be read; go back and try again.", 400);
  return inSession(svc, req, url, form, post, WRITE_PAGES.has(path));
}

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
async function inSession(svc: Services, req: Request, url: URL, form: URLSearchParams | null, run: Page, writes = false): Promise<Response> {
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
      const c: WebContext = { svc, req, url, tx, now, session, cookies, form: form ?? new URLSearchParams(), base: svc.config.baseUrl, secure };
      return { res: await run(c), cookies: c.cookies };
    };
    const { res, cookies } = form
      ? await svc.db.tx(run_)
      : await svc.db.read(run_).catch((err) => {
          if (err instanceof NeedsWrite) return svc.db.tx(run_);
          throw err;
        });
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
    return errorPage("Cannot do that", err.message, err.status, html`<p>Go back and try again.</p>`);
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
async function authorizeRequest(svc: Services, req: Request, url: URL, address: string): Promise<Response> {
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
  return inSession(svc, req, url, null, authorize);
}

/** GET /account/oidc/start?flow=...: asks the provider (outside any transaction), then remembers the sign-in. */
async function oidcStart(svc: Services, req: Request, url: URL): Promise<Response> {
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
  return inSession(svc, req, url, null, async (c) => {
    c.session = await updateSession(c.tx, c.session, { oidcFlow: { ...started.state } });
    return seeOther(started.url);
  });
}

/** GET /account/oidc/callback: the pending sign-in is used up, the code exchanged with the provider, then applied. */
async function oidcCallback(svc: Services, req: Request, url: URL): Promise<Response> {
  if (!svc.config.oidc) return errorPage("Not available", "No identity provider is configured on this server.", 404);
  let checked = { error: "" } as ReturnType<typeof checkCallback>;
  await inSession(svc, req, url, null, async (c) => {
    checked = checkCallback(c.session, url);
    if (c.session.oidcFlow) c.session = await updateSession(c.tx, c.session, { oidcFlow: null });
    return new Response(null);
  });
  if ("error" in checked) return errorPage("Cannot sign in", checked.error, 400);
  const { flow, code } = checked;
  const identity = await exchangeAtProvider(svc, flow, code, svc.config.clock.now());
  if ("error" in identity) return errorPage("Cannot sign in", identity.error, 502);
  return inSession(svc, req, url, null, async (c) => {
    await applyIdentity(c, identity);
    return seeOther(isFlow(flow.flow) ? FLOWS[flow.flow] : "/account");
  });
}
