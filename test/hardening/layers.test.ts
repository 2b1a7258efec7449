// The layers of server/, read from the import lines (type imports too): the contract is a leaf, the domain knows
// nothing of tools, transports or pages, no two folders of server/ import each other, directly or round about, and
// the command line reaches the domain only where it runs on the database itself.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const SERVER = join(ROOT, "server");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** A folder of server/ by its name, a file at its top by its file name. */
const part = (file: string) => relative(SERVER, file).split("/")[0]!;

const IMPORT = /(?:^|\n)\s*(?:import|export)[^"';]*?from\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

/** Which parts of server/ each part imports, with one file that does it for each. */
function graph(): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const file of sources(SERVER)) {
    for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const target = normalize(join(dirname(file), (m[1] ?? m[2])!));
      if (!target.startsWith(SERVER + "/")) continue;
      const [from, to] = [part(file), part(target)];
      if (from === to) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      edges.get(from)!.set(to, relative(ROOT, file));
    }
  }
  return edges;
}

const edges = graph();
const importsOf = (p: string) => [...(edges.get(p)?.keys() ?? [])].sort();

test("the contract is a leaf: it imports nothing of the domain, the tools or any other layer", () => {
  expect(importsOf("contract").filter((p) => p !== "errors.ts")).toEqual([]);
});

test("the domain imports no tools, transports, pages, views, jobs or observability", () => {
  const forbidden = ["tools", "adapters", "web", "views", "jobs", "observability", "app.ts", "serve.ts"];
  expect(importsOf("domain").filter((p) => forbidden.includes(p))).toEqual([]);
});

test("no two parts of server/ import each other, directly or through others", () => {
  const cycles: string[] = [];
  const walk = (node: string, path: string[]) => {
    for (const next of edges.get(node)?.keys() ?? []) {
      if (next === path[0]) cycles.push([...path, next].map((p, i, all) => (i < all.length - 1 ? `${p} (${edges.get(p)!.get(all[i + 1]!)})` : p)).join(" -> "));
      else if (!path.includes(next) && next > path[0]!) walk(next, [...path, next]);
    }
  };
  for (const start of [...edges.keys()].sort()) walk(start, [start]);
  expect(cycles).toEqual([]);
});

test("cli/ reaches the domain only in the admin commands that run on the database themselves", () => {
  const CLI = join(ROOT, "cli");
  // Commands an operator runs on the server's own database, calling the domain directly as the tools do.
  const admin = ["cli/commands/import.ts", "cli/commands/inbox.ts", "cli/commands/invites.ts", "cli/commands/keys.ts", "cli/commands/users.ts"];
  const reaching = sources(CLI).flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(IMPORT)]
      .map((m) => relative(ROOT, normalize(join(dirname(file), (m[1] ?? m[2])!))))
      .filter((target) => target.startsWith("server/domain/"))
      .map((target) => `${relative(ROOT, file)} -> ${target}`),
  );
  expect(reaching.filter((edge) => !admin.includes(edge.split(" -> ")[0]!))).toEqual([]);
});

/** The files of server/web/ each file there imports (type imports too). */
function webFiles(): Map<string, string[]> {
  const web = join(SERVER, "web");
  const out = new Map<string, string[]>();
  for (const file of sources(web)) {
    const targets = [...readFileSync(file, "utf8").matchAll(IMPORT)]
      .map((m) => normalize(join(dirname(file), (m[1] ?? m[2])!)))
      .filter((t) => dirname(t) === web && t.endsWith(".ts"));
    out.set(
      relative(web, file),
      targets.map((t) => relative(web, t)),
    );
  }
  return out;
}

test("the web framework imports no page, and no two files of server/web import each other, directly or round about", () => {
  const files = webFiles();
  const reached = new Set<string>();
  const reach = (f: string) => {
    if (reached.has(f)) return;
    reached.add(f);
    for (const t of files.get(f) ?? []) reach(t);
  };
  reach("framework.ts");
  expect([...reached].filter((f) => /(-pages?|^pages)\.ts$/.test(f))).toEqual([]);
  const cycles: string[] = [];
  const walk = (node: string, path: string[]) => {
    for (const next of files.get(node) ?? []) {
      if (next === path[0]) cycles.push([...path, next].join(" -> "));
      else if (!path.includes(next) && next > path[0]!) walk(next, [...path, next]);
    }
  };
  for (const start of [...files.keys()].sort()) walk(start, [start]);
  expect(cycles).toEqual([]);
});
