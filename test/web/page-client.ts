// A tiny browser for the page tests: a cookie jar, forms posted with the page's CSRF token, redirects left visible.
import { expect } from "bun:test";
import type { Flow } from "../../server/web/context.ts";
import type { TestServer } from "../harness.ts";

export interface PageResponse {
  status: number;
  headers: Headers;
  html: string;
  location: string | null;
  /** The address a GET ended at (path and query), after the redirect that adds a page's view id. */
  url?: string;
}

export class PageClient {
  readonly cookies = new Map<string, string>();
  /** The CSRF token of the last page that had a form. */
  csrf = "";

  /** extra: headers sent with every request (a reverse proxy's X-Forwarded-For, say). */
  constructor(
    readonly base: string,
    private readonly extra: Record<string, string> = {},
  ) {}

  private remember(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair!.indexOf("=");
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      if (/Max-Age=0/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader(): Record<string, string> {
    return { ...this.extra, ...(this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ") } : {}) };
  }

  private async read(res: Response): Promise<PageResponse> {
    this.remember(res);
    const html = await res.text();
    const m = html.match(/name="csrf" value="([^"]+)"/);
    if (m) this.csrf = m[1]!;
    return { status: res.status, headers: res.headers, html, location: res.headers.get("location") };
  }

  /** A URL of this server, or any absolute URL (for a provider's pages). */
  private abs(path: string) {
    return path.startsWith("http") ? path : `${this.base}${path}`;
  }

  /**
   * A page, as a browser opens it: a page whose forms carry idempotency keys, asked for without a view id (or with
   * one past its hour), redirects to the same address with one (server/web/form-keys.ts), which is followed; `url`
   * is then the address with it.
   */
  async get(path: string): Promise<PageResponse> {
    const res = await this.read(await fetch(this.abs(path), { redirect: "manual", headers: this.cookieHeader() }));
    const asked = new URL(this.abs(path));
    const to = res.status === 303 && res.location ? new URL(res.location, asked) : null;
    if (to && to.pathname === asked.pathname && to.searchParams.has("view") && to.searchParams.get("view") !== asked.searchParams.get("view")) {
      return { ...(await this.read(await fetch(to, { redirect: "manual", headers: this.cookieHeader() }))), url: `${to.pathname}${to.search}` };
    }
    return { ...res, url: `${asked.pathname}${asked.search}` };
  }

  /** Posts a form; the CSRF token of the last page is added unless `csrf` is given (null: none at all). */
  async post(path: string, fields: Record<string, string>, csrf: string | null = this.csrf): Promise<PageResponse> {
    const body = new URLSearchParams({ ...fields, ...(csrf === null ? {} : { csrf }) });
    return this.read(
      await fetch(this.abs(path), {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", ...this.cookieHeader() },
        body,
      }),
    );
  }

  /** Follows redirects on this server (relative Locations) until a page answers. */
  async follow(r: PageResponse): Promise<PageResponse> {
    let cur = r;
    while (cur.status >= 300 && cur.status < 400 && cur.location?.startsWith("/")) cur = await this.get(cur.location);
    return cur;
  }
}

/** What the sign-in helpers need of a server: a tool call as an agent (a TestServer, or a federating child process). */
type Tools = Pick<TestServer, "ok">;

/** The one-time sign-in code the server left in an agent's inbox (the newest one). */
export async function inboxCode(s: Tools, key: string): Promise<string> {
  const inbox = await s.ok("get_inbox", { since: "0", include_seen: true }, key);
  const items = inbox.items.filter((i: any) => i.type === "auth.join_code");
  expect(items.length).toBeGreaterThan(0);
  return items[items.length - 1].payload.code;
}

/** Signs a browser in as `handle` through a page flow, reading the code from `key`'s inbox. */
export async function signInWithCode(s: Tools, b: PageClient, flow: Flow, handle: string, key: string): Promise<PageResponse> {
  const sent = await b.post("/account/signin/code", { handle, flow });
  expect(sent.status).toBe(303);
  const page = await b.follow(sent);
  expect(page.html).toContain("One-time code");
  const verified = await b.post("/account/signin/verify", { code: await inboxCode(s, key), flow });
  expect(verified.status).toBe(303);
  return b.follow(verified);
}
