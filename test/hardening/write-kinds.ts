// Writes whose effect can be counted: each call carries a unique marker in a free-text field, and the rows
// one call leaves it in are measured once. "Exactly once" is then: every marker in exactly that many rows.
import type { RawSql } from "../../db/client.ts";
import { findTool, checkedInputJsonSchema } from "../../server/tools/catalogue.ts";
import type { Tool } from "../../server/tools/define.ts";
import { markerRows } from "./db-inspect.ts";
import type { JsonSchema } from "./schema-arbitrary.ts";
import { validArgs, worldHints, type Api, type Member } from "./world.ts";

// The writes the issue names, when registered: contact requests, profile updates, groups, expenses, payments,
// envelopes, plans.
export const WRITE_TOOLS = ["add_contact", "update_me", "create_group", "add_expense", "record_payment", "send_envelope", "create_plan"];
const MARKER_FIELDS = ["description", "note", "subject", "title", "name"];
// update_me overwrites the profile, so its marker does not stay: its effect shows in the idempotency record alone
const OVERWRITES = new Set(["update_me"]);
// a contact request needs someone not asked before, or the second request has nothing left to do
const NEEDS_STRANGER = new Set(["add_contact"]);
// each call is a new payment: the same amount between the same two again, while one is pending, is refused as the
// same money recorded twice unless it says it is a second payment (docs/ledger.md)
const meant = (name: string, args: Record<string, unknown>) =>
  name === "record_payment" && args.group_id !== undefined ? { ...args, second_payment: true } : args;

export const MARKER = /wmark-[a-z_]+-\d{6}/g;
export const markerOf = (tool: string, n: number) => `wmark-${tool}-${String(n).padStart(6, "0")}`;

export interface WriteKind {
  tool: Tool;
  markerField: string;
  /** Rows one call leaves its marker in; null when the marker does not stay (update_me). */
  rowsPerCall: number | null;
  /** Each call must name an agent it never named before (contact requests). */
  needsStranger: boolean;
  args(groupId: string | undefined, target: string, marker: string, idempotencyKey: string): Record<string, unknown>;
}

export interface Setting {
  api: Api;
  db: Pick<RawSql, "execute">;
  caller: Member;
  groupId?: string;
  /** A contact of the caller and member of the group. */
  partner: Member;
  stranger(): Promise<Member>;
}

/** The registered kinds whose generated call succeeds, each measured with one call; and the rest, with why. */
export async function calibrateKinds(w: Setting): Promise<{ kinds: WriteKind[]; skipped: string[] }> {
  const kinds: WriteKind[] = [];
  const skipped: string[] = [];
  for (const name of WRITE_TOOLS) {
    const tool = findTool(name);
    if (!tool) {
      skipped.push(`${name} (not registered)`);
      continue;
    }
    const props: Record<string, JsonSchema> = (checkedInputJsonSchema(tool) as JsonSchema).properties ?? {};
    const markerField = MARKER_FIELDS.find((f) => props[f]?.type === "string" || props[f]?.anyOf);
    if (!markerField) {
      skipped.push(`${name} (no free-text field for a marker)`);
      continue;
    }
    const template = (groupId: string | undefined, target: string, seed: number) => {
      const args = validArgs(tool, worldHints({ ids: new Map(groupId ? [["group_id", [groupId]]] : []), target, fixed: { [markerField]: "x" } }), seed, {
        omitWeight: 8,
      });
      return args && meant(name, args);
    };
    let measured: { seed: number; rows: number } | undefined;
    for (let seed = 0; seed < 12 && !measured; seed++) {
      const target = NEEDS_STRANGER.has(name) ? (await w.stranger()).handle : w.partner.handle;
      const args = template(w.groupId, target, seed);
      if (!args) continue;
      const marker = markerOf(`calibrate_${name}`, seed);
      const r = await w.api.call(name, { ...args, [markerField]: marker, idempotency_key: crypto.randomUUID() }, w.caller.key);
      if (r.status === 200) measured = { seed, rows: (await markerRows(w.db, MARKER)).get(marker) ?? 0 };
    }
    if (!measured) {
      skipped.push(`${name} (no generated call succeeded)`);
      continue;
    }
    const { seed, rows } = measured;
    kinds.push({
      tool,
      markerField,
      rowsPerCall: OVERWRITES.has(name) ? null : rows,
      needsStranger: NEEDS_STRANGER.has(name),
      args: (groupId, target, marker, idempotencyKey) => ({ ...template(groupId, target, seed)!, [markerField]: marker, idempotency_key: idempotencyKey }),
    });
  }
  return { kinds, skipped };
}
