// svc as an installable app: the web app manifest, its icons (drawn here as PNGs, once per process), the script every
// page loads (app.js) and the service worker (sw.js). The worker keeps the pages a person read while signed in and
// shows them offline, read-only; it keeps nothing else. Whether a page may be kept is the server's to say, on each
// page (offlineMark): a page read signed in is marked with an opaque id of its reader, a page answered to a browser no
// one is signed in to tells the worker to forget every page it kept, and a sign-out clears the site's data outright.
import { createHmac } from "node:crypto";
import { deflateSync } from "node:zlib";
import appScript from "./app.js" with { type: "text" };
import workerScript from "./sw.js" with { type: "text" };
import { html, page, serveScript } from "./html.ts";
import type { WebSession } from "./session.ts";
import { signedIn } from "./session.ts";
import { OFFLINE_BANNER, OFFLINE_NOT_SAVED } from "./wording.ts";

/** The header of a page that tells the service worker what to do with it (sw.js): `keep READER` or `forget`. */
export const OFFLINE_HEADER = "X-Svc-Offline";

/** What a sign-out answers with: the browser drops this site's cache and storage (the worker and its pages too). */
export const CLEAR_SITE_DATA = { "Clear-Site-Data": '"cache", "storage"' };

/**
 * Paths whose page holds a secret of its address, or a step of a sign-in, never kept offline (a link that signs in or
 * claims a place, a confirmation, an app waiting for approval): their pages are neither kept nor make the worker forget.
 */
const NEVER_KEPT = ["/account/reset/", "/claim/", "/settings/link/", "/settings/email/", "/join", "/oauth/", "/signin", "/signup", "/account/export"];

/**
 * Marks a page for the service worker. Only a GET's whole page (200, HTML, not a download) read in a browser signed in
 * with full access is kept, under an id of its reader that tells nothing of who it is (the worker forgets every page
 * of another reader before keeping one); a page answered to a browser no one is signed in to makes it forget them all.
 */
export function offlineMark(res: Response, req: Request, path: string, session: WebSession | null, formKey: string): Response {
  if (req.method !== "GET" && req.method !== "HEAD") return res;
  if (!session || !signedIn(session, "settings")) {
    res.headers.set(OFFLINE_HEADER, "forget");
    return res;
  }
  const isPage = res.status === 200 && (res.headers.get("content-type") ?? "").startsWith("text/html") && !res.headers.has("content-disposition");
  const secret = NEVER_KEPT.some((p) => path === p || path.startsWith(p.endsWith("/") ? p : `${p}/`));
  if (!isPage || !signedIn(session) || secret) return res;
  const reader = createHmac("sha256", formKey).update(`offline-reader|${session.agentId}`).digest("base64url").slice(0, 22);
  res.headers.set(OFFLINE_HEADER, `keep ${reader}`);
  return res;
}

const MANIFEST = JSON.stringify({
  id: "/",
  name: "svc",
  short_name: "svc",
  description: "Share expenses with friends and settle up; your agent network's inbox, mail and plans.",
  start_url: "/",
  scope: "/",
  display: "standalone",
  background_color: "#ffffff",
  theme_color: "#2454c5",
  icons: [
    { src: "/icons/icon-192.png", sizes: "192x192", type: "image/png", purpose: "any" },
    { src: "/icons/icon-512.png", sizes: "512x512", type: "image/png", purpose: "any" },
    { src: "/icons/maskable-512.png", sizes: "512x512", type: "image/png", purpose: "maskable" },
  ],
});

/** GET /manifest.webmanifest */
export const serveManifest = () =>
  new Response(MANIFEST, {
    headers: { "Content-Type": "application/manifest+json; charset=utf-8", "Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff" },
  });

/** GET /assets/app.js: the script of every page (the worker's registration, focus after a refused form, sign-out). */
export const serveAppScript = () => serveScript(appScript);

let worker: string | undefined;

/**
 * GET /sw.js: the service worker, at the root so its scope is every page; revalidated on each registration check
 * (no-cache), and allowed to fetch only this server.
 */
export async function serveWorker(): Promise<Response> {
  if (!worker) {
    const offline = page("You are offline", html`<p class="offline" role="status">${OFFLINE_NOT_SAVED}</p><p><a href="/">Home</a></p>`, { same: true });
    const headers = Object.fromEntries([...offline.headers].filter(([k]) => k.toLowerCase() !== "set-cookie"));
    worker = workerScript
      .replace("__BANNER__", JSON.stringify(html`<p class="offline" role="status">${OFFLINE_BANNER}</p>`.text))
      .replace("__NOT_SAVED_BODY__", JSON.stringify(await offline.text()))
      .replace("__NOT_SAVED_HEADERS__", JSON.stringify(headers));
  }
  return new Response(worker, {
    headers: {
      "Content-Type": "text/javascript; charset=utf-8",
      "Cache-Control": "no-cache",
      "Service-Worker-Allowed": "/",
      "Content-Security-Policy": "default-src 'none'; connect-src 'self'",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

// The icons: a white ring crossed by a bar (a whole, split) on svc's blue, drawn with anti-aliased edges.
const BLUE = [0x24, 0x54, 0xc5] as const;
const icons = new Map<string, Buffer>();

/** The PNG of an icon: `maskable` fills the square and keeps the mark inside the safe zone (the inner 80%). */
function drawIcon(size: number, maskable: boolean): Buffer {
  const rgba = new Uint8Array(size * size * 4);
  const half = size / 2;
  const corner = size * 0.2;
  const scale = maskable ? 0.7 : 1;
  const ring = size * 0.27 * scale;
  const stroke = size * 0.075 * scale;
  const bar = size * 0.3 * scale;
  const clamp = (v: number) => Math.max(0, Math.min(1, v));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const px = x + 0.5 - half;
      const py = y + 0.5 - half;
      // Background: the whole square when maskable, else a rounded square (signed distance to its edge).
      let bg = 1;
      if (!maskable) {
        const qx = Math.abs(px) - (half - corner);
        const qy = Math.abs(py) - (half - corner);
        const outside = Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0) - corner;
        bg = clamp(0.5 - outside);
      }
      // The mark: a ring, and a bar from its lower left to its upper right.
      const dRing = Math.abs(Math.hypot(px, py) - ring) - stroke / 2;
      const t = Math.max(-bar, Math.min(bar, (px - py) / 2));
      const dBar = Math.hypot(px - t, py + t) - stroke / 2;
      const mark = clamp(0.5 - Math.min(dRing, dBar));
      const i = (y * size + x) * 4;
      for (let k = 0; k < 3; k++) rgba[i + k] = Math.round(BLUE[k]! * (1 - mark) + 255 * mark);
      rgba[i + 3] = Math.round(255 * bg);
    }
  }
  return png(size, rgba);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** An 8-bit RGBA PNG: each row filtered with "none", the whole deflated. */
function png(size: number, rgba: Uint8Array): Buffer {
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, size);
  view.setUint32(4, size);
  header.set([8, 6, 0, 0, 0], 8);
  const rows = new Uint8Array(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) rows.set(rgba.subarray(y * size * 4, (y + 1) * size * 4), y * (size * 4 + 1) + 1);
  const signature = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", header), chunk("IDAT", deflateSync(rows)), chunk("IEND", new Uint8Array())]);
}

const ICONS: Record<string, { size: number; maskable: boolean }> = {
  "icon-192.png": { size: 192, maskable: false },
  "icon-512.png": { size: 512, maskable: false },
  "maskable-512.png": { size: 512, maskable: true },
};

/** GET /icons/{name}: one of the manifest's icons, drawn on first use; anything else is not found. */
export function serveIcon(name: string): Response | null {
  const icon = ICONS[name];
  if (!icon) return null;
  let bytes = icons.get(name);
  if (!bytes) {
    bytes = drawIcon(icon.size, icon.maskable);
    icons.set(name, bytes);
  }
  return new Response(new Uint8Array(bytes), {
    headers: { "Content-Type": "image/png", "Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff" },
  });
}
