// svc's service worker (served at /sw.js, its scope every page; webapp.ts fills in the words and the offline page).
// It keeps the pages a person read while signed in, and nothing else: a page is kept only when the server marks it
// "keep READER" (X-Svc-Offline), and the pages of one reader only. Offline, a kept page is shown as it was read,
// with a banner saying so and every form disabled; a page not kept is answered by a page saying so. A page the server
// marks "forget" (answered to a browser no one is signed in to), a page of another reader, or a "forget" message (a
// sign-out form sent) drops every kept page. Requests that are not a GET of a page (forms, scripts, the API) are never
// touched.
const BANNER = __BANNER__;
const NOT_SAVED_BODY = __NOT_SAVED_BODY__;
const NOT_SAVED_HEADERS = __NOT_SAVED_HEADERS__;
const PREFIX = "svc-pages-";

const forget = async () => {
  for (const name of await caches.keys()) if (name.startsWith(PREFIX)) await caches.delete(name);
};

/** A page's key: its address without the view id a page with forms carries (form-keys.ts) or a fragment. */
const keyOf = (address) => {
  const url = new URL(address);
  url.searchParams.delete("view");
  url.hash = "";
  return url.href;
};

async function keep(request, response, reader) {
  const name = PREFIX + reader;
  for (const other of await caches.keys()) if (other.startsWith(PREFIX) && other !== name) await caches.delete(other);
  await (await caches.open(name)).put(keyOf(request.url), response);
}

/** A kept page as it was read, marked offline, its forms disabled (a disabled fieldset disables all it holds). */
async function offline(request) {
  const kept = await caches.match(keyOf(request.url), { ignoreVary: true });
  if (!kept) return new Response(NOT_SAVED_BODY, { status: 503, headers: NOT_SAVED_HEADERS });
  const text = (await kept.text())
    .replace(/<main\b[^>]*>/, (main) => `${main}\n${BANNER}`)
    .replace(/<form\b[^>]*>/g, (form) => `${form}<fieldset class="offline-off" disabled>`)
    .replace(/<\/form>/g, "</fieldset></form>");
  const headers = new Headers(kept.headers);
  headers.delete("X-Svc-Offline");
  return new Response(text, { status: 200, headers });
}

async function navigate(event) {
  let response;
  try {
    response = await fetch(event.request);
  } catch {
    return offline(event.request);
  }
  const mark = response.headers.get("X-Svc-Offline") ?? "";
  if (mark === "forget") event.waitUntil(forget());
  else if (mark.startsWith("keep ") && response.status === 200 && response.type === "basic") event.waitUntil(keep(event.request, response.clone(), mark.slice(5)));
  return response;
}

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("message", (event) => {
  if (event.data?.type === "forget") event.waitUntil(forget());
});
self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET" || request.mode !== "navigate" || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith(navigate(event));
});
