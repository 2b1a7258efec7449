import { test } from "bun:test";
import { startTestServer } from "../harness.ts";
import { buildWorld, validArgs, worldHints } from "./world.ts";
import { findTool } from "../../server/tools/catalogue.ts";
test("x", async () => {
  const s = await startTestServer();
  const w = await buildWorld(s, "dbg", 5);
  for (const name of ["update_plan", "update_expense", "join_network"]) {
    const t = findTool(name)!;
    for (let seed = 1; seed <= 4; seed++) {
      const args = validArgs(t, worldHints({ ids: w.ids, target: w.member.handle, fixed: { title: "hello" } }), seed, { omitWeight: seed % 2 ? 4 : 1 });
      const r = await s.call(name, args, w.owner.key);
      console.log(name, JSON.stringify(args).slice(0, 200), r.status, JSON.stringify(r.body.error ?? "").slice(0, 250));
    }
  }
  await s.stop();
}, 60000);
