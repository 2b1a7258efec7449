// The floor svc's cursor poll stands on: the statements svc runs for a poll that finds nothing new (BEGIN, the API
// key's lookup, the inbox counters, COMMIT), prepared once on the `libsql` driver, on svc's own database file, in a
// bare Bun.serve handler that reads the JSON body and the bearer token and answers JSON. No routing, rate limits,
// validation, logs or metrics: the gap between this and svc is svc's own cost per call.
// Run by bench/inbox.ts: bun run bench/poll-floor.ts PORT DB_FILE
import Database from "libsql";

const [port, file] = process.argv.slice(2);
if (!port || !file) throw new Error("usage: bun run bench/poll-floor.ts PORT DB_FILE");

// The text of keyLookup (server/auth/credentials.ts) and countsQuery (server/domain/inbox.ts), as drizzle builds them.
const KEY_LOOKUP = `SELECT agents.agent_id, agents.handle, agents.display_name, clients.client_id, api_keys.scopes,
    api_keys.expires_at, api_keys.revoked_at, clients.revoked_at, clients.last_used_at
  FROM api_keys JOIN clients ON clients.client_id = api_keys.client_id JOIN agents ON agents.agent_id = clients.agent_id
  WHERE api_keys.key_hash = ?`;
const expired = (condition: string) =>
  `(SELECT count(*) FROM inbox_items INDEXED BY inbox_agent_expiry WHERE agent_id = ?1 AND expires_at <= ?2 AND ${condition})`;
const COUNTS = `SELECT unread - ${expired("seen = 0 AND dismissed = 0")},
    requires_action - ${expired("requires_action = 1 AND resolved = 0 AND dismissed = 0")}
  FROM inbox_counts WHERE agent_id = ?1`;

const db = new Database(file);
const key = db.prepare(KEY_LOOKUP).raw(true);
const counts = db.prepare(COUNTS).raw(true);

Bun.serve({
  hostname: "127.0.0.1",
  port: Number(port),
  async fetch(req) {
    await req.json();
    const token = req.headers.get("authorization")?.slice(7) ?? "";
    db.exec("BEGIN");
    let k: unknown[] | undefined;
    let c: unknown[] | undefined;
    try {
      k = key.get([Bun.SHA256.hash(token, "hex")]) as unknown[] | undefined;
      c = k && (counts.get([k[0], new Date().toISOString()]) as unknown[] | undefined);
    } finally {
      db.exec("COMMIT");
    }
    if (!k) return new Response("unauthenticated", { status: 401 });
    const data = { items: [], unread: c?.[0] ?? 0, requires_action: c?.[1] ?? 0, next_cursor: null, suggested_next: [] };
    return Response.json({ ok: true, data, request_id: crypto.randomUUID() });
  },
});
