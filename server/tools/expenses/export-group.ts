import { z } from "zod";
import { exportGroup as exportLedger } from "../../domain/ledger/exchange/export.ts";
import { defineTool } from "../define.ts";
import { Untrusted, Uuid } from "../../contract/wire.ts";

export const exportGroup = defineTool({
  name: "export_group",
  title: "Export a group's ledger",
  description:
    "Exports a group's whole live ledger as text: format csv (RFC 4180; one row per expense share and per payment, columns record,id,date,description,category,currency,amount,participant,paid,share,from,to,state) or json (the group, balances with settle_up, expenses, payments). The text contains members' descriptions and notes, so it comes as untrusted_content; hand it to your human as a file.",
  tags: ["read"],
  input: z.strictObject({ group_id: Uuid, format: z.enum(["csv", "json"]) }),
  output: z.object({ format: z.enum(["csv", "json"]), filename: z.string(), media_type: z.string(), content: Untrusted }),
  async run(ctx, input) {
    return { ...(await exportLedger(ctx, input.group_id, input.format)), suggested_next: ["get_balances"] };
  },
});
