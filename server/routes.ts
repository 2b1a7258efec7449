// Every HTTP endpoint, one line each: method, path, handler. `{name}` is one path segment and a trailing `*` the
// rest of the path (server/router.ts); GET answers HEAD too. A path nobody answers is a JSON 404, or in the web's
// areas an HTML page saying so (isWebPath). Tool calls all go through invoke() (server/tools/invoke.ts).
import { SCHEMA_DIALECT } from "./tools/json-schema.ts";
import { SHARED_RULES } from "./tools/shared-rules.ts";
import { AppError } from "./errors.ts";
import { json } from "./adapters/http.ts";
import { handleMcp } from "./adapters/mcp.ts";
import { openApiDocument } from "./adapters/openapi.ts";
import { TOOL_ALIASES, callTool, resultResponse } from "./adapters/rest.ts";
import { wellKnownDocument } from "./adapters/well-known.ts";
import { discoveryDocument, jwksDocument } from "./federation/discovery.ts";
import { receiveTransaction } from "./federation/transactions.ts";
import { receiveLedgerCall } from "./federation/home-calls.ts";
import { bearerToken } from "./auth/authenticate.ts";
import * as endpoints from "./auth/oauth-endpoints.ts";
import type { Ops } from "./observability/ops.ts";
import type { Params, Route } from "./router.ts";
import type { Services } from "./services.ts";
import { catalogue, describeTool, findTool } from "./tools/catalogue.ts";
import { invoke } from "./tools/invoke.ts";
import { postCreateKey, postDisconnect, renderAccount } from "./web/account-page.ts";
import * as accounts from "./web/accounts-page.ts";
import * as accountData from "./web/account-data-page.ts";
import { postConsent, postSignup, renderConsent } from "./web/consent-page.ts";
import { notFoundPage } from "./web/context.ts";
import {
  postDeleteExpense,
  postEditExpense,
  postNewExpense,
  postRespondExpense,
  postAttachment,
  postDeleteAttachment,
  postRestoreExpense,
  renderEditExpense,
  renderExpense,
  renderNewExpense,
} from "./web/expense-pages.ts";
import { postClaim, renderClaim } from "./web/claim-page.ts";
import {
  exportCsv,
  postConfirmAll,
  postExpenseAnswer,
  postPayment,
  postPaymentAnswer,
  postPlaceholder,
  postPlaceholderLink,
  postStopRecurring,
  renderActivity,
  renderGroup,
  serveCopyScript,
  renderGroups,
} from "./web/groups-page.ts";
import { wantsHtml } from "./web/home-page.ts";
import { serveLocalTimeScript } from "./web/html.ts";
import { serveAppScript, serveIcon, serveManifest, serveWorker } from "./web/webapp.ts";
import { postApprove, postCreate, postDeny, postUserCode, renderJoin } from "./web/join-page.ts";
import { postMerge, renderMerge } from "./web/merge-page.ts";
import { action, form, formWithAddress, machine, page, secretPage, slowForm, takesPost, uploadAction } from "./web/framework.ts";
import { authorizePage, docs, home, isWebPath, jwks, oidc, oidcCallback, oidcStart, preflight, renderFlow, signInForm } from "./web/pages.ts";
import { postPayAcrossGroups } from "./web/dashboard-page.ts";
import { postAddContact, postBlockContact, postContactCode, postRespondContact, renderContacts } from "./web/contacts-page.ts";
import { postArchiveGroup, postInviteContact, postNewGroup, postRenameGroup, renderGroupSettings, renderNewGroup } from "./web/group-settings-page.ts";
import { postConfirmExpenses, postGroupInvite, postInboxSeen, renderInbox } from "./web/inbox-page.ts";
import { postChoosePlan, postNewPlan, postRespondPlan, renderNewPlan, renderPlan, renderPlans } from "./web/plans-page.ts";
import { postReplyEnvelope, postSendEnvelope, renderEnvelope, renderEnvelopes } from "./web/envelopes-page.ts";
import {
  postAcceptsFrom,
  postPhone,
  postPhoneCancel,
  postPhoneRemove,
  postPhoneVerify,
  postSettings,
  postSettingsLink,
  renderSettings,
  renderSettingsLink,
} from "./web/settings-page.ts";
import { postSendCode, postSignOut, postVerifyCode } from "./web/signin.ts";
import {
  postClaimMail,
  postEmail,
  postEmailCancel,
  postEmailConfirm,
  postEmailPrefs,
  postEmailRemove,
  postEmailSignin,
  postUnsubscribe,
  renderEmailConfirm,
  renderUnsubscribe,
} from "./web/email-pages.ts";
import { serveAttachment } from "./adapters/attachment-files.ts";
import { attachmentBodyLimit } from "./tools/expenses/attachment-context.ts";

/** What every handler is handed. */
export interface Call {
  svc: Services;
  ops: Ops;
  req: Request;
  path: string;
  requestId: string;
  clientAddress: () => string;
  /** Made once per app: the OpenAPI document's text. */
  cache: { openapi?: string };
}

const route =
  (method: Route<Call>["method"]) =>
  (path: string, run: Route<Call>["run"]): Route<Call> => ({ method, path, run });
const get = route("GET");
const post = route("POST");
const put = route("PUT");
const options = route("OPTIONS");
const any = route("*");
// Forms that act as the signed-in human: a browser signed in through a read-only credential may not send them.
const WRITES = true;

export const ROUTES: readonly Route<Call>[] = [
  // Tools: REST and MCP, first as the busiest.
  post("/v1/tools/*", (c, { rest }) => callTool(c.svc, toolName(rest!), c)),
  any("/mcp", (c) => handleMcp(c.svc, c.path, c)),
  any("/mcp/*", (c) => handleMcp(c.svc, c.path, c)),
  ...Object.entries(TOOL_ALIASES).map(([path, tool]) => post(path, (c) => callTool(c.svc, tool, c))),
  post("/v1/sandbox/tools/*", (c, { rest }) => callTool(c.svc, toolName(rest!), c, { sandbox: true })),
  get("/v1/tools", listTools),
  get("/v1/attachments/*", (c, { rest }) => serveAttachment(c.svc, c.req, rest!, c.requestId)),
  get("/v1/tools/*", describe),
  get("/v1", whoAmI),
  get("/openapi.json", openApi),
  get("/.well-known/oauth-*", wellKnown),
  get("/healthz", (c) => json({ ok: true }, 200, c.requestId)),
  get("/readyz", (c) => c.ops.readyz(c.requestId)),
  get("/metrics", (c) => c.ops.metricsEndpoint(c.req, c.requestId)),

  // Federation with other svc servers (server/federation/, docs/federation.md).
  get("/.well-known/svc-federation", (c) => discoveryDocument(c.svc)),
  get("/.well-known/svc-federation/jwks.json", (c) => jwksDocument(c.svc)),
  put("/fed/v1/txn/{txn_id}", (c, { txn_id }) => receiveTransaction(c.svc, c.req, txn_id!, c.clientAddress())),
  post("/fed/v1/ledger/{call_id}", (c, { call_id }) => receiveLedgerCall(c.svc, c.req, call_id!, c.clientAddress(), invoke)),

  // The OAuth authorization server.
  get("/.well-known/jwks.json", jwks),
  get("/oauth/authorize", authorizePage),
  get("/oauth/consent", page(renderConsent)),
  post("/oauth/consent", form(postConsent, WRITES)),
  post("/oauth/signup", form(postSignup)),
  post("/oauth/register", machine(endpoints.register)),
  post("/oauth/token", machine(endpoints.token)),
  post("/oauth/revoke", machine(endpoints.revoke)),
  options("/oauth/register", preflight),
  options("/oauth/token", preflight),
  options("/oauth/revoke", preflight),
  any("/oauth/register", takesPost),
  any("/oauth/token", takesPost),
  any("/oauth/revoke", takesPost),

  // Pages for people.
  get("/", (c, params) => (wantsHtml(c.req) ? home(c, params) : notFound(c))),
  get("/docs", docs),
  get("/docs/*", docs),
  get("/join", page(renderJoin)),
  post("/join", form(postUserCode)),
  post("/join/approve", form(postApprove, WRITES)),
  post("/join/deny", form(postDeny)),
  post("/join/create", form(postCreate)),
  get("/account", page(renderAccount)),
  get("/account/merge", page(renderMerge)),
  post("/account/merge", form(postMerge, WRITES)),
  post("/account/keys", form(postCreateKey, WRITES)),
  post("/account/clients/disconnect", action(postDisconnect)),
  // A person's data: all of it as one file, or the account deleted (account-data-page.ts).
  get("/account/export", page(accountData.renderAccountExport)),
  get("/account/delete", page(accountData.renderDeleteAccount)),
  post("/account/delete", (c, params) => action((a) => accountData.postDeleteAccount(a, c.clientAddress()))(c, params)),
  post("/account/signin/code", signInForm(postSendCode)),
  post("/account/signin/verify", signInForm(postVerifyCode)),
  post("/account/signout", form(postSignOut)),
  get("/account/oidc/start", oidc(oidcStart)),
  get("/account/oidc/callback", oidc(oidcCallback)),
  get("/settings", page(renderSettings)),
  post("/settings", action(postSettings, "/settings", "settings")),
  post("/settings/servers", action(postAcceptsFrom, "/settings", "settings")),
  get("/settings/link/*", page(renderSettingsLink)),
  post("/settings/link", form(postSettingsLink)),
  post("/settings/phone", formWithAddress(postPhone, WRITES)),
  post("/settings/phone/verify", form(postPhoneVerify, WRITES)),
  post("/settings/phone/cancel", form(postPhoneCancel, WRITES)),
  post("/settings/phone/remove", form(postPhoneRemove, WRITES)),
  post("/settings/email", form(postEmail, WRITES)),
  post("/settings/email/cancel", form(postEmailCancel, WRITES)),
  post("/settings/email/remove", form(postEmailRemove, WRITES)),
  post("/settings/email/prefs", form(postEmailPrefs, WRITES)),
  get("/settings/email/confirm/*", secretPage(renderEmailConfirm)),
  post("/settings/email/confirm", form(postEmailConfirm)),
  get("/settings/email/unsubscribe/*", secretPage(renderUnsubscribe)),
  post("/settings/email/unsubscribe/*", postUnsubscribe),
  post("/signin/email", signInForm(postEmailSignin)),
  post("/groups/{group_id}/placeholders/email", form(postClaimMail, WRITES)),
  get("/claim/{code}", secretPage(renderClaim)),
  post("/claim/{code}", action(postClaim, "/signin")),
  get("/groups", page(renderGroups)),
  get("/groups/{group_id}", page(renderGroup)),
  get("/groups/{group_id}/export.csv", page(exportCsv)),
  get("/groups/{group_id}/activity", page(renderActivity)),
  post("/groups/{group_id}/payments", action(postPayment, "/groups")),
  post("/groups/{group_id}/placeholders", action(postPlaceholder, "/groups")),
  post("/groups/{group_id}/placeholders/link", action(postPlaceholderLink, "/groups")),
  post("/groups/{group_id}/payments/respond", action(postPaymentAnswer, "/groups")),
  post("/groups/{group_id}/expenses/respond", action(postExpenseAnswer, "/groups")),
  // A group's expenses, one by one (the expense's id is read from the path: a route hands over the first id only).
  get("/groups/{group_id}/expenses/new", page(renderNewExpense)),
  post("/groups/{group_id}/expenses/new", action(postNewExpense, "/groups")),
  post("/groups/{group_id}/expenses/confirm-all", action(postConfirmAll, "/groups")),
  post("/groups/{group_id}/recurring/stop", action(postStopRecurring, "/groups")),
  get("/groups/{group_id}/expenses/{expense_id}", page(renderExpense)),
  get("/groups/{group_id}/expenses/{expense_id}/edit", page(renderEditExpense)),
  post("/groups/{group_id}/expenses/{expense_id}/edit", action(postEditExpense, "/groups")),
  post("/groups/{group_id}/expenses/{expense_id}/delete", action(postDeleteExpense, "/groups")),
  post("/groups/{group_id}/expenses/{expense_id}/restore", action(postRestoreExpense, "/groups")),
  post("/groups/{group_id}/expenses/{expense_id}/respond", action(postRespondExpense, "/groups")),
  post(
    "/groups/{group_id}/expenses/{expense_id}/attachments",
    uploadAction((svc) => attachmentBodyLimit(svc.config), postAttachment),
  ),
  post("/groups/{group_id}/expenses/{expense_id}/attachments/delete", action(postDeleteAttachment, "/groups")),
  // The web app: new group and a group's settings, contacts, inbox (the dashboard is `/` for a signed-in browser).
  get("/groups/new", page(renderNewGroup)),
  post("/groups/new", action(postNewGroup, "/groups")),
  get("/groups/{group_id}/settings", page(renderGroupSettings)),
  post("/groups/{group_id}/settings/rename", action(postRenameGroup, "/groups")),
  post("/groups/{group_id}/settings/archive", action(postArchiveGroup, "/groups")),
  post("/groups/{group_id}/settings/invite", action(postInviteContact, "/groups")),
  get("/contacts", page(renderContacts)),
  post("/contacts/add", action(postAddContact, "/contacts")),
  post("/payments/across", action(postPayAcrossGroups, "/")),
  post("/contacts/respond", action(postRespondContact, "/contacts")),
  post("/contacts/block", action(postBlockContact, "/contacts")),
  post("/contacts/code", action(postContactCode, "/contacts")),
  get("/inbox", page(renderInbox)),
  post("/inbox/seen", action(postInboxSeen, "/inbox")),
  post("/inbox/confirm-all", action(postConfirmExpenses, "/inbox")),
  post("/inbox/group-invite", action(postGroupInvite, "/inbox")),
  get("/plans", page(renderPlans)),
  get("/plans/new", page(renderNewPlan)),
  post("/plans/new", action(postNewPlan, "/plans")),
  get("/plans/{plan_id}", page(renderPlan)),
  post("/plans/{plan_id}/choose", action(postChoosePlan, "/plans")),
  post("/plans/{plan_id}/respond", action(postRespondPlan, "/plans")),
  get("/envelopes", page(renderEnvelopes)),
  post("/envelopes/send", action(postSendEnvelope, "/envelopes")),
  get("/envelopes/{envelope_id}", page(renderEnvelope)),
  post("/envelopes/{envelope_id}/reply", action(postReplyEnvelope, "/envelopes")),

  // Accounts for people: sign-up, sign-in with a password or a passkey, what /account adds, reset links.
  get("/signup", page(accounts.renderSignup)),
  post("/signup", slowForm(accounts.prepareSignup, accounts.signupWork, accounts.postSignup)),
  get("/signin", page(accounts.renderSignin)),
  // The ways of the one sign-in form (signin.ts signinBlock): a refused one shows the page of its flow again.
  post(
    "/signin/password",
    slowForm(
      (w, address) => accounts.prepareSignInPassword(w, address, renderFlow),
      accounts.checkGuess,
      (w, g, ok, address) => accounts.postSignInPassword(w, g, ok, address, renderFlow),
    ),
  ),
  post(
    "/signin/passkey",
    slowForm(accounts.prepareSignInPasskey, accounts.passkeyWork, (w, p, counter) => accounts.postSignInPasskey(w, p, counter, renderFlow)),
  ),
  post("/passkeys/options", form(accounts.postPasskeyOptions)),
  get("/assets/passkey.js", accounts.servePasskeyScript),
  get("/assets/copy.js", serveCopyScript),
  get("/assets/local-time.js", serveLocalTimeScript),
  // The installable app: its manifest, icons, the script of every page and the service worker (webapp.ts).
  get("/manifest.webmanifest", serveManifest),
  get("/icons/*", (c, { rest }) => serveIcon(rest!) ?? notFound(c)),
  get("/assets/app.js", serveAppScript),
  get("/sw.js", serveWorker),
  post(
    "/account/passkeys",
    slowForm(
      (w) => accounts.prepareAddPasskey(w, renderAccount),
      accounts.addPasskeyWork,
      (w, p, key) => accounts.postAddPasskey(w, p, key, renderAccount),
      WRITES,
    ),
  ),
  post(
    "/account/password",
    slowForm(
      (w, address) => accounts.prepareSetPassword(w, address, renderAccount),
      accounts.passwordWork,
      (w, p, hash, address) => accounts.postSetPassword(w, p, hash, address, renderAccount),
      WRITES,
    ),
  ),
  post("/account/signout-everywhere", form(accounts.postSignOutEverywhere)),
  get("/account/reset/*", page(accounts.renderResetLink)),
  post("/account/reset", form(accounts.postResetLink)),
];

/** No route for this method and path. */
export function notFound(c: Call): Response {
  if (isWebPath(c.req, c.path)) return notFoundPage();
  throw new AppError("NOT_FOUND", `Nothing at ${c.req.method} ${c.path}.`, undefined, undefined, "See /openapi.json for every endpoint.");
}

/** The tool name in a path; a malformed percent-escape (%ZZ) names no tool rather than failing. */
function toolName(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** GET /v1/tools: the catalogue, answered 304 when the client has this version. */
function listTools(c: Call): Response {
  const { tools, etag } = catalogue();
  if (c.req.headers.get("if-none-match") === etag) {
    return new Response(null, { status: 304, headers: { ETag: etag, "X-Request-Id": c.requestId } });
  }
  // The schemas' dialect and the rules every tool shares are said once here, not in each tool.
  const data = {
    version: etag.replaceAll('"', ""),
    count: tools.length,
    schema_dialect: SCHEMA_DIALECT,
    shared_rules: SHARED_RULES,
    tools,
    suggested_next: ["register_agent"],
  };
  return json({ ok: true, data, request_id: c.requestId }, 200, c.requestId, { ETag: etag, "Cache-Control": "no-cache" });
}

/** GET /v1/tools/{name}: one tool. */
function describe(c: Call, { rest = "" }: Params): Response {
  const tool = findTool(toolName(rest));
  if (!tool) throw new AppError("NOT_FOUND", "There is no tool by that name.", undefined, undefined, "GET /v1/tools lists every tool.");
  return json({ ok: true, data: { tool: describeTool(tool), suggested_next: [tool.name] }, request_id: c.requestId }, 200, c.requestId);
}

function openApi(c: Call): Response {
  c.cache.openapi ??= JSON.stringify(openApiDocument(c.svc.config.baseUrl));
  return new Response(c.cache.openapi, { headers: { "Content-Type": "application/json", "X-Request-Id": c.requestId } });
}

/** GET /.well-known/oauth-authorization-server and oauth-protected-resource (also with the base URL's path). */
function wellKnown(c: Call): Response {
  const metadata = wellKnownDocument(c.path, c.svc.config.baseUrl);
  if (!metadata) return notFound(c);
  return json(metadata, 200, c.requestId, { "Cache-Control": "public, max-age=300" });
}

/** GET /v1: get_me through the same pipeline, plus where to go next. */
async function whoAmI(c: Call): Promise<Response> {
  const meta = { requestId: c.requestId, token: bearerToken(c.req.headers.get("authorization")), clientAddress: c.clientAddress };
  const result = await invoke(c.svc, "get_me", {}, meta);
  if (result.ok) {
    const base = c.svc.config.baseUrl;
    result.data = {
      ...result.data,
      links: { tools: `${base}/v1/tools`, openapi: `${base}/openapi.json`, mcp: `${base}/mcp`, docs: `${base}/mcp/docs` },
    };
  }
  return resultResponse(c.svc, result, c.requestId);
}
