// svc starts in milliseconds for every command that does not serve: what cli/main.ts imports statically (evaluated
// at every start) is the command line alone, and the server, the database and the domain are imported by the
// commands that run on them, when they run. Completion answers from the tools' names and fields built into the
// binary, which must be the catalogue's. The times themselves are printed by bench/cli-start.ts (a test of a time
// would fail on a busy machine).
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { shorthandFields, shorthandValues } from "../../cli/shorthands.ts";
import { fieldsOf } from "../../cli/tool-fields.ts";
import { inputJsonSchema, TOOLS } from "../../server/tools/catalogue.ts";
import { ensureBuilt, svc } from "./bin.ts";

setDefaultTimeout(60_000);

const ROOT = join(import.meta.dir, "../..");

// What may be loaded before svc knows its command: the command line, commander, and the leaves of server/ that its
// flags, help and messages are made of (settings and their parsers, AppError, the wording of answers).
const AT_START = [
  /^cli\//,
  /^node_modules\/commander\//,
  /^node_modules\/reflect-metadata\//,
  /^package\.json$/,
  /^db\/errors\.ts$/,
  /^server\/(config|errors|version|clock|client-address)\.ts$/,
  /^server\/contract\/(email|handles|ledger-wording|audit)\.ts$/,
  /^server\/observability\/(logs|audit)\.ts$/,
  /^server\/auth\/(public-addresses|reset-link-ttl)\.ts$/,
  /^server\/jobs\/rates-url\.ts$/,
];

describe("what svc loads at start", () => {
  test("cli/main.ts's static imports reach neither the server, the database driver, the domain nor the tools", async () => {
    const built = await Bun.build({ entrypoints: [join(ROOT, "cli/main.ts")], root: ROOT, target: "bun", metafile: true });
    expect(built.success).toBe(true);
    const inputs = (built.metafile as { inputs: Record<string, { imports: { path: string; kind: string }[] }> }).inputs;
    // Every module evaluated at start: the entry and what it imports, but not what an action imports with import().
    const atStart = new Set<string>();
    const next = ["cli/main.ts"];
    while (next.length) {
      const file = next.pop()!;
      if (atStart.has(file) || !inputs[file]) continue; // node's modules (fs, os) are the runtime's own
      atStart.add(file);
      for (const i of inputs[file].imports) if (i.kind !== "dynamic-import") next.push(i.path);
    }
    expect(atStart.size).toBeGreaterThan(20);
    expect([...atStart].filter((file) => !AT_START.some((allowed) => allowed.test(file))).sort()).toEqual([]);
    // The server, the database, the domain and the catalogue are still in the binary, reached when a command runs.
    for (const lazy of ["server/serve.ts", "server/tools/catalogue.ts", "db/client.ts", "server/domain/account-deletion.ts", "node_modules/libsql/index.js"]) {
      expect(inputs[lazy]).toBeDefined();
    }
  });
});

describe("completion's tools and fields", () => {
  const live = fieldsOf(TOOLS, inputJsonSchema);
  const complete = async (...words: string[]) => {
    const r = await svc(["__complete", "--", ...words]);
    expect(r.code).toBe(0);
    return r.stdout.split("\n").filter(Boolean);
  };

  beforeAll(() => ensureBuilt(), 120_000);

  test("the compiled svc offers every tool of the live catalogue, in its order", async () => {
    expect(await complete("call", "")).toEqual(TOOLS.map((t) => t.name));
    expect(await complete("tools", "")).toEqual(TOOLS.map((t) => t.name));
  });

  test("and for every tool, its fields and the values of each field with a fixed set, as the catalogue's schemas give them", async () => {
    const checks: [string[], string[]][] = [];
    for (const tool of TOOLS) {
      const props = (inputJsonSchema(tool) as { properties?: Record<string, unknown> }).properties ?? {};
      const fields = Object.keys(props).filter((f) => f !== "idempotency_key");
      checks.push([["call", tool.name, ""], [...fields, ...shorthandFields(props, new Set())].map((f) => `${f}=`)]);
      for (const [field, values] of Object.entries(live[tool.name]!)) {
        const all = [...values, ...shorthandValues(field, props)];
        if (all.length) checks.push([["call", tool.name, `${field}=`], all.map((v) => `${field}=${v}`)]);
      }
    }
    // A few at a time: each is a start of svc.
    const offered: [string[], string[]][] = [];
    for (let i = 0; i < checks.length; i += 4) {
      const batch = checks.slice(i, i + 4);
      offered.push(...(await Promise.all(batch.map(async ([words]) => [words, await complete(...words)] as [string[], string[]]))));
    }
    expect(offered).toEqual(checks);
  });

  test("a mistyped command is answered with the nearest tools from the same names", async () => {
    const r = await svc(["balances"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("svc call get_balances");
  });
});
