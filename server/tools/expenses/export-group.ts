import { AsOf } from "../../contract/ledger.ts";
import { asOf } from "../../domain/ledger/events/home.ts";
import { z } from "zod";
import { exportGroup as exportLedger } from "../../domain/ledger/exchange/export.ts";
import { defineTool } from "../define.ts";
import description from "./export-group.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { GroupId, Untrusted } from "../../contract/wire.ts";

export const exportGroup = defineTool({
  name: "export_group",
  title: "Export a group's ledger",
  description,
  tags: ["read"],
  input: z.strictObject({ group_id: GroupId, format: z.enum(["csv", "json"]).describe("csv or json") }),
  output: z.object({ format: z.enum(["csv", "json"]), filename: z.string(), media_type: z.string(), content: Untrusted, ...AsOf }),
  example: { group_id: madeUp("group_id"), format: "csv" },
  async run(ctx, input) {
    return { ...(await exportLedger(ctx, input.group_id, input.format)), ...(await asOf(ctx.tx, input.group_id, ctx.now)), suggested_next: ["get_balances"] };
  },
});
