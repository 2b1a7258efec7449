// The access matrix, generated from the registry: every tool with no key, a garbage key, a revoked key, a key
// rotated more than 10 minutes ago and a read-only key; every identifier a tool takes, tried by an agent who
// must not see the object; and a blocked agent who must learn nothing from any answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MINUTE } from "../../server/clock.ts";
import { createClient, issueApiKey } from "../../server/auth/credentials.ts";
import { sha256 } from "../../server/auth/secrets.ts";
import { findTool, checkedInputJsonSchema, TOOLS } from "../../server/tools/catalogue.ts";
import type { Tool } from "../../server/tools/define.ts";
import { HANDLE_PATTERN } from "../../server/contract/wire.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { snapshot as snapshotOf } from "./db-inspect.ts";
import type { JsonSchema } from "./schema-arbitrary.ts";
import { befriend, buildWorld, familyOf, idFields, inputFamilies, ok, producersOf, register, validArgs, worldHints, type Member, type World } from "./world.ts";

let s: TestServer;
let world: World;
beforeAll(async () => {
  s = await startTestServer();
  world = await buildWorld(s, "ac", 7);
}, 30_000);
afterAll(() => s.stop());

const PRIVATE_TOOLS = TOOLS.filter((t) => !t.isPublic);

const snapshot = () => snapshotOf(s.server.db.raw);

/** Arguments that would act on the world's real objects: everything valid, ids real, handles the member's. */
function realArgs(t: Tool, seed = 11): Record<string, unknown> {
  const args = validArgs(t, worldHints({ ids: world.ids, target: world.member.handle }), seed, { require: idFields(t) });
  if (!args) throw new Error(`${t.name}: no valid arguments could be generated from its schema`);
  return args;
}

/**
 * realArgs whose other fields also pass the tool's own checks (a dispute without a reason is refused before any
 * lookup), so the answer turns on the identifiers alone.
 */
async function argsPastValidation(t: Tool, caller: Member): Promise<Record<string, unknown>> {
  for (let seed = 11; seed < 40; seed++) {
    const args = realArgs(t, seed);
    const unknown = Object.fromEntries(
      Object.entries(args).map(([k, v]) => [k, idFields(t).includes(k) ? (Array.isArray(v) ? [crypto.randomUUID()] : crypto.randomUUID()) : v]),
    );
    if ((await s.call(t.name, fresh(unknown), caller.key)).body.error?.code !== "VALIDATION_ERROR") return args;
  }
  throw new Error(`${t.name}: every generated argument set fails the tool's own validation`);
}

const fresh = (args: Record<string, unknown>) => ("idempotency_key" in args ? { ...args, idempotency_key: crypto.randomUUID() } : args);

/** An answer with what legitimately varies between two calls blanked out. */
function normalized(body: any, replacements: [string, string][] = []): string {
  let text = JSON.stringify({ ...body, request_id: undefined });
  for (const [from, to] of replacements) text = text.replaceAll(from, to);
  return text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "<uuid>").replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>");
}

describe("credentials, for every tool", () => {
  test("no key, a garbage key, a revoked key and a key rotated over 10 minutes ago: UNAUTHENTICATED, nothing changed", async () => {
    // a second client of one agent, revoked through disconnect_client from the first
    const r = await register(s, "ac-revoker");
    const secondKey = await s.server.db.tx(async (tx) =>
      issueApiKey(tx, await createClient(tx, r.agent_id, "second", "api_key", s.clock.now(), { maxKeys: 100 }), s.clock.now()),
    );
    expect((await s.call("get_me", {}, secondKey)).status).toBe(200);
    const second = (await ok(s, "list_clients", {}, r.key)).clients.find((c: any) => !c.current);
    await ok(s, "disconnect_client", { client_id: second.client_id, idempotency_key: crypto.randomUUID() }, r.key);
    const rotated = await register(s, "ac-rotated");
    await ok(s, "rotate_api_key", { idempotency_key: crypto.randomUUID() }, rotated.key);
    s.clock.advance(10 * MINUTE + 1000);
    const credentials: [string, string | null][] = [
      ["no key", null],
      ["garbage key", "svc_thisKeyWasNeverIssuedToAnyoneAtAll0000000000"],
      ["revoked key", secondKey],
      ["key rotated over 10 minutes ago", rotated.key],
    ];
    const sweep = async (tools: Tool[]) => {
      for (const t of tools) {
        const args = fresh(realArgs(t));
        for (const [label, key] of credentials) {
          const res = await s.call(t.name, args, key);
          if (t.isPublic) {
            // a public tool ignores credentials: whatever it answers, it is not a refusal of one
            expect({ tool: t.name, label, unauthenticated: res.status === 401 }).toEqual({ tool: t.name, label, unauthenticated: false });
            continue;
          }
          expect({ tool: t.name, label, status: res.status, code: res.body.error?.code }).toEqual({
            tool: t.name,
            label,
            status: 401,
            code: "UNAUTHENTICATED",
          });
          expect(res.headers.get("www-authenticate")).toStartWith("Bearer resource_metadata=");
        }
      }
    };
    const before = await snapshot();
    await sweep(PRIVATE_TOOLS);
    expect(await snapshot()).toBe(before);
    await sweep(TOOLS.filter((t) => t.isPublic));
  }, 30_000);

  test("a read-only key (svc:read): write tools are FORBIDDEN with details.required_scope, read tools pass", async () => {
    const ro = await register(s, "ac-readonly");
    await s.server.db.raw.execute({ sql: "UPDATE api_keys SET scopes = 'svc:read' WHERE key_hash = ?", args: [sha256(ro.key)] });
    // read tools may keep something (get_settings_link stores its one-time link); writes must change nothing
    let before = "";
    for (const t of [...PRIVATE_TOOLS].sort((a, b) => Number(a.isWrite) - Number(b.isWrite))) {
      if (t.isWrite && !before) before = await snapshot();
      const res = await s.call(t.name, fresh(realArgs(t)), ro.key);
      if (t.isWrite) {
        expect({ tool: t.name, status: res.status, code: res.body.error?.code, scope: res.body.error?.details?.required_scope }).toEqual({
          tool: t.name,
          status: 403,
          code: "FORBIDDEN",
          scope: "svc:write",
        });
      } else {
        expect({ tool: t.name, refused: [401, 403].includes(res.status) }).toEqual({ tool: t.name, refused: false });
      }
    }
    expect(await snapshot()).toBe(before);
  }, 30_000);
});

describe("identifiers the caller may not see", () => {
  test("every identifier family some tool takes exists in the world, unless no registered tool makes it", () => {
    const missing = [...inputFamilies()].filter((f) => !world.ids.get(f)?.length);
    for (const f of missing) console.warn(`access: no ${f} in the world: no registered tool produced one (skipped)`);
    // ids the registered tools do produce must have been made: the matrix would be hollow without them
    expect(missing.filter((f) => producersOf(f).length).map((f) => `${f} (made by ${producersOf(f).map((t) => t.name)})`)).toEqual([]);
  });

  test("an agent that must not see the object gets the very answer an unknown id gets (NOT_FOUND), and nothing changes", async () => {
    const x = world.stranger;
    await ok(s, "get_me", {}, x.key);
    const controls: { t: Tool; field: string; variants: { args: Record<string, unknown>; unknown: string; blank: [string, string][] }[] }[] = [];
    for (const t of PRIVATE_TOOLS.filter((t) => idFields(t).length)) {
      const base = await argsPastValidation(t, x);
      for (const field of idFields(t)) {
        const variants = [];
        // every object of the family in the world: an invite the member may answer, a code invite nobody answers...
        for (const id of (world.ids.get(familyOf(field)) ?? []).slice(0, 4)) {
          const args = { ...base, [field]: Array.isArray(base[field]) ? [id] : id };
          const unknownId = crypto.randomUUID();
          const blank: [string, string][] = [
            [id, "<ID>"],
            [unknownId, "<ID>"],
          ];
          const before = await snapshot();
          const seen = await s.call(t.name, fresh(args), x.key);
          expect(await snapshot()).toBe(before);
          const unknown = await s.call(t.name, fresh({ ...args, [field]: Array.isArray(base[field]) ? [unknownId] : unknownId }), x.key);
          expect({ tool: t.name, field, answer: normalized(seen.body, blank) }).toEqual({ tool: t.name, field, answer: normalized(unknown.body, blank) });
          // NOT_FOUND, or a bulk write that matched nothing (ack_inbox answers updated: 0 for ids that are not yours)
          const matchedNothing = seen.status === 200 && Object.values(seen.body.data).some((v) => v === 0);
          const outcome = seen.status === 404 ? seen.body.error.code : matchedNothing ? "matched nothing" : seen.status;
          expect({ tool: t.name, field, outcome }).toEqual({ tool: t.name, field, outcome: seen.status === 404 ? "NOT_FOUND" : "matched nothing" });
          variants.push({ args, unknown: normalized(unknown.body, blank), blank });
        }
        controls.push({ t, field, variants });
      }
    }
    // control: for one of those objects at least, the owner or the member is not answered as if it did not exist,
    // so the stranger's answer is about visibility. Reads first, destructive tools last: controls change things.
    const rank = (t: Tool) => (t.tags.includes("destructive") ? 2 : t.isWrite ? 1 : 0);
    for (const c of controls.sort((a, b) => rank(a.t) - rank(b.t))) {
      let insiderSeesIt = false;
      for (const v of c.variants) {
        for (const who of [world.owner, world.member]) {
          if (insiderSeesIt) break;
          insiderSeesIt = normalized((await s.call(c.t.name, fresh(v.args), who.key)).body, v.blank) !== v.unknown;
        }
      }
      expect({ tool: c.t.name, field: c.field, insiderSeesIt }).toEqual({ tool: c.t.name, field: c.field, insiderSeesIt: true });
    }
    expect(controls.length).toBeGreaterThan(0);
  }, 60_000);
});

describe("a blocked agent learns nothing", () => {
  const handleFields = (t: Tool) =>
    Object.entries(((checkedInputJsonSchema(t) as JsonSchema).properties ?? {}) as Record<string, JsonSchema>)
      .filter(([, p]) => p.pattern === HANDLE_PATTERN.source || p.items?.pattern === HANDLE_PATTERN.source)
      .map(([n]) => n);

  async function compare(b: Member, blocker: Member, other: Member, tools: Tool[], ids: Map<string, string[]>) {
    // both named agents blanked in both answers: only what differs beyond their names counts
    const blank: [string, string][] = [blocker, other].flatMap((m) => [
      [m.handle, "<target>"],
      [m.agent_id, "<target-id>"],
    ]);
    let compared = 0;
    // destructive tools last, so removing or blocking does not hollow out the comparisons after it
    const rank = (t: Tool) => (t.tags.includes("destructive") ? 1 : 0);
    for (const t of [...tools].sort((x, y) => rank(x) - rank(y))) {
      for (let seed = 1; seed <= 3; seed++) {
        const argsFor = (target: Member) => validArgs(t, worldHints({ ids, target: target.handle }), seed, { require: handleFields(t) });
        const toBlocker = argsFor(blocker);
        const toOther = argsFor(other);
        if (!toBlocker || !toOther) continue;
        const a = await s.call(t.name, toBlocker, b.key);
        const o = await s.call(t.name, toOther, b.key);
        expect({ tool: t.name, seed, status: a.status, answer: normalized(a.body, blank) }).toEqual({
          tool: t.name,
          seed,
          status: o.status,
          answer: normalized(o.body, blank),
        });
        compared++;
      }
    }
    return compared;
  }

  test("add_contact to an agent that blocked the caller answers exactly as to one that did not", async () => {
    const b = await register(s, "bl-b1");
    const blocker = await register(s, "bl-d1");
    const other = await register(s, "bl-e1");
    await ok(s, "block_contact", { handle: b.handle, idempotency_key: crypto.randomUUID() }, blocker.key);
    expect(await compare(b, blocker, other, [findTool("add_contact")!], new Map())).toBe(3);
    // and the caller's own view of the two requests is the same
    const outgoing = (await ok(s, "list_contacts", { state: "outgoing" }, b.key)).contacts.map((c: any) => c.agent.handle).sort();
    expect(outgoing).toEqual([blocker.handle, other.handle].sort());
  });

  test("every tool that names another agent answers the same whether that contact blocked the caller or not", async () => {
    const b = await register(s, "bl-b2");
    const blocker = await register(s, "bl-a2");
    const other = await register(s, "bl-c2");
    await befriend(s, b, blocker);
    await befriend(s, b, other);
    await ok(s, "block_contact", { handle: b.handle, idempotency_key: crypto.randomUUID() }, blocker.key);
    // the caller's own objects to name them in (a group to invite to, and so on)
    const mine = new Map<string, string[]>();
    if (findTool("create_group"))
      mine.set("group_id", [(await ok(s, "create_group", { name: "Mine", currency: "EUR", idempotency_key: crypto.randomUUID() }, b.key)).group.group_id]);
    const tools = TOOLS.filter((t) => !t.isPublic && t.isWrite && handleFields(t).length && t.name !== "add_contact");
    expect(await compare(b, blocker, other, tools, mine)).toBeGreaterThanOrEqual(tools.length);
  }, 30_000);
});
