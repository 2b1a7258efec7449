// Looking up a route of a table (server/routes.ts): exact paths in a Map, then the few patterns in the table's order,
// each tried only when the path starts with its literal part. GET answers HEAD too; "*" takes every method.
export type Method = "GET" | "POST" | "PUT" | "OPTIONS" | "*";

/** What a path's patterns matched: `{group_id}` as `group_id`, a trailing `*` as `rest`. */
export type Params = Readonly<Record<string, string>>;

/** `{name}` is one path segment, a trailing `*` the rest of the path (at least one character). */
export interface Route<C> {
  method: Method;
  path: string;
  run: (c: C, params: Params) => Promise<Response> | Response;
}

interface Pattern<C> extends Route<C> {
  prefix: string;
  /** The names of the path's parameters, in order. */
  names: string[];
  /** Null for a path that is its prefix and `*`: the rest is the param, no regex needed (the busiest routes). */
  regex: RegExp | null;
}

const NONE: Params = Object.freeze({});

const accepts = (route: Method, method: string) => route === method || route === "*" || (route === "GET" && method === "HEAD");

export class Router<C> {
  private readonly exact = new Map<string, Route<C>[]>();
  private readonly patterns: Pattern<C>[] = [];

  constructor(routes: readonly Route<C>[]) {
    for (const r of routes) {
      const wild = r.path.search(/[{*]/);
      if (wild < 0) {
        const list = this.exact.get(r.path) ?? [];
        list.push(r);
        this.exact.set(r.path, list);
        continue;
      }
      const source = r.path
        .split(/(\{[^}]+\}|\*$)/)
        .map((part) => (part === "*" ? "(.+)" : part.startsWith("{") ? "([^/]+)" : part.replace(/[.+?^$()[\]\\|]/g, "\\$&")))
        .join("");
      const rest = wild === r.path.length - 1 && r.path.endsWith("*");
      const names = [...r.path.matchAll(/\{([^}]+)\}|\*$/g)].map((m) => m[1] ?? "rest");
      this.patterns.push({ ...r, prefix: r.path.slice(0, wild), names, regex: rest ? null : new RegExp(`^${source}$`) });
    }
  }

  /** The route for this method and path with its parameters by name, or null. */
  find(method: string, path: string): { route: Route<C>; params: Params } | null {
    const exact = this.exact.get(path);
    if (exact) for (const route of exact) if (accepts(route.method, method)) return { route, params: NONE };
    for (const route of this.patterns) {
      if (!path.startsWith(route.prefix) || !accepts(route.method, method)) continue;
      if (!route.regex) {
        if (path.length > route.prefix.length) return { route, params: { rest: path.slice(route.prefix.length) } };
        continue;
      }
      const m = route.regex.exec(path);
      if (m) return { route, params: Object.fromEntries(route.names.map((name, i) => [name, m[i + 1]!])) };
    }
    return null;
  }
}
