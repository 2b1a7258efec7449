// The web app's own entry points besides its pages (routes in server/routes.ts): the page each sign-in flow shows,
// the home page, the OAuth authorization request and the OpenID Connect steps, which talk to the provider outside any
// transaction. How pages, forms and actions run is the framework's (framework.ts).
import { ClientMetadataError, isClientIdUrl, refreshMetadataClient } from "../auth/client-metadata.ts";
import * as endpoints from "../auth/oauth-endpoints.ts";
import { startOidc } from "../auth/oidc.ts";
import { renderAccount } from "./account-page.ts";
import { authorize, renderConsent } from "./consent-page.ts";
import { FLOWS, errorPage, isFlow, returnPath, type Flow, type Messages, type WebContext } from "./context.ts";
import { renderDashboard } from "./dashboard-page.ts";
import { renderDocs } from "./docs-page.ts";
import { type Caller, formWithAddress, inSession, rateLimited, type WebRoute } from "./framework.ts";
import { renderGroups } from "./groups-page.ts";
import { renderHome, wantsHtml } from "./home-page.ts";
import { html, seeOther } from "./html.ts";
import { renderJoin } from "./join-page.ts";
import { readCookie, SESSION_COOKIE, signedIn, updateSession } from "./session.ts";
import { applyIdentity, checkCallback, exchangeAtProvider } from "./signin.ts";
import { offlineMark } from "./webapp.ts";

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

/**
 * A form of the sign-in steps, which show the page of the flow being signed in to (join, consent, account, groups);
 * with the client's address, which text messages are limited by.
 */
export const signInForm = (step: (c: WebContext, render: typeof renderFlow, address: string) => Promise<Response>): WebRoute =>
  formWithAddress((w, address) => step(w, renderFlow, address));

export const preflight: WebRoute = () => endpoints.preflight();
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
