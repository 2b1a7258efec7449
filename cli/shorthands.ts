// What svc call accepts besides the tool's own JSON: a group's name where an id goes, and splits and payers
// written without JSON. Each shorthand turns into the JSON the tool takes before the call; JSON still works.
import { CliError, EXIT, printable, usageError } from "./output.ts";
import { type Target, type ToolDescription, callTool } from "./remote.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SPLIT_MODES = ["equal", "exact", "percent", "shares", "adjustment"];

/** The fields that name a group: group_id, and any field ending in _group_id (via_group_id). */
const isGroupField = (name: string) => name === "group_id" || name.endsWith("_group_id");

/** `alice:40,bob:20` as [["alice","40"],["bob","20"]]; a word without a colon has no value. */
function handleList(field: string, raw: unknown): [string, string | undefined][] {
  const text = String(raw).trim();
  if (!text) throw usageError(`${field} is empty.`, `Write ${field}=alice,bob (or alice:40,bob:20).`);
  return text.split(",").map((part) => {
    const [handle, value, ...rest] = part.trim().split(":");
    if (!handle || rest.length || value === "") throw usageError(`${field}: "${part}" is not handle or handle:value.`, `Write ${field}=alice:40,bob:20.`);
    return [handle.replace(/^@/, ""), value];
  });
}

/**
 * split=MODE [among=alice,bob | among=alice:2,bob:1] and paid_by=alice:40,bob:20 (paid_by=alice: alice paid the
 * whole amount), for the tools that take split and paid_by (add_expense, update_expense).
 */
function expandSplits(tool: ToolDescription, args: Record<string, unknown>): void {
  const fields = tool.input_schema.properties ?? {};
  if (fields.split && !fields.among && args.among !== undefined && typeof args.split !== "string") {
    throw usageError("among goes with split=MODE (split=equal among=alice,bob).");
  }
  if (fields.split && typeof args.split === "string") {
    const mode = args.split;
    if (!SPLIT_MODES.includes(mode)) throw usageError(`split=${mode}: the mode is one of ${SPLIT_MODES.join(", ")}.`, "e.g. split=equal among=alice,bob");
    const among =
      args.among === undefined
        ? undefined
        : handleList("among", args.among).map(([handle, value]) => {
            if (value === undefined) return { handle };
            // Weights and percentages are numbers; amounts (exact, adjustment) stay decimal strings.
            return { handle, value: (mode === "shares" || mode === "percent") && !Number.isNaN(Number(value)) ? Number(value) : value };
          });
    args.split = among ? { mode, among } : { mode };
    delete args.among;
  }
  if (fields.paid_by && typeof args.paid_by === "string") {
    const payers = handleList("paid_by", args.paid_by);
    args.paid_by = payers.map(([handle, amount]) => {
      if (amount !== undefined) return { handle, amount };
      if (payers.length > 1) throw usageError(`paid_by: give each payer's amount (${handle}:AMOUNT) when several paid.`);
      // One payer without an amount paid all of it.
      return args.amount !== undefined
        ? { handle, amount: String(args.amount) }
        : args.amount_minor !== undefined
          ? { handle, amount_minor: args.amount_minor }
          : { handle };
    });
  }
}

/** Every group the caller is in, archived ones too (list_groups, page by page). */
async function allGroups(target: Target): Promise<{ group_id: string; name: string; archived?: boolean }[]> {
  const groups = [];
  let cursor: string | null = null;
  do {
    const page: Record<string, any> = await callTool(target, "list_groups", { include_archived: true, limit: 100, ...(cursor ? { cursor } : {}) }, true);
    groups.push(...page.groups);
    cursor = page.next_cursor;
  } while (cursor);
  return groups;
}

/**
 * A group's name where an id goes: group=NAME stands for group_id, and a value of group_id or *_group_id that is
 * not an id is looked up in list_groups by its exact name (any case). Several groups of that name, or none, is an
 * error that lists them.
 */
async function resolveGroups(target: Target, tool: ToolDescription, args: Record<string, unknown>): Promise<void> {
  const fields = tool.input_schema.properties ?? {};
  if (fields.group_id && !fields.group && args.group !== undefined) {
    if (args.group_id !== undefined) throw usageError("give group or group_id, not both.");
    args.group_id = String(args.group);
    delete args.group;
  }
  const named = Object.keys(args).filter((f) => isGroupField(f) && fields[f] && typeof args[f] === "string" && !UUID.test(args[f] as string));
  if (!named.length) return;
  const groups = await allGroups(target);
  for (const field of named) {
    const name = String(args[field]);
    const matches = groups.filter((g) => g.name.toLowerCase() === name.toLowerCase());
    if (matches.length === 1) {
      args[field] = matches[0]!.group_id;
      continue;
    }
    const listed = (list: typeof groups) => list.map((g) => printable(`  ${g.name}${g.archived ? " (archived)" : ""}: ${field}=${g.group_id}`));
    if (matches.length > 1) {
      throw new CliError(EXIT.usage, `${matches.length} of your groups are named "${name}"; give the id of the one you mean:`, undefined, listed(matches));
    }
    throw new CliError(
      EXIT.notFound,
      `none of your groups is named "${name}".`,
      groups.length ? "Give one of these names or ids:" : "You are in no group yet (create_group, or join_group with an invite code).",
      listed(groups),
    );
  }
}

/** For completion: the shorthand fields a tool takes besides its own (group, among), given the fields typed so far. */
export function shorthandFields(props: Record<string, unknown>, given: Set<string>): string[] {
  return [
    ...(props.group_id && !props.group && !given.has("group") && !given.has("group_id") ? ["group"] : []),
    ...(props.split && !props.among && given.has("split") && !given.has("among") ? ["among"] : []),
  ];
}

/** For completion: the values of split=MODE. */
export const shorthandValues = (field: string, props: Record<string, unknown>): string[] => (field === "split" && props.split ? SPLIT_MODES : []);

/** The arguments as the tool takes them: shorthands expanded, group names turned into ids. */
export async function expandShorthands(target: Target, tool: ToolDescription, args: Record<string, unknown>): Promise<void> {
  expandSplits(tool, args);
  await resolveGroups(target, tool, args);
}
