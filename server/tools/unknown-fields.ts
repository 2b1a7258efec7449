// An unknown field in a call's arguments, named with the field the caller most likely meant: the error says
// "did you mean value?" instead of only "unrecognized key".
type Schema = Record<string, unknown>;

/** The same thing under another name elsewhere in the catalogue (an exact split's `value` is paid_by's `amount`). */
const SYNONYMS: Record<string, string[]> = {
  value: ["amount"],
  amount: ["value"],
  amount_cents: ["amount_minor"],
  cents: ["amount_minor"],
  id: ["group_id", "expense_id", "payment_id", "plan_id", "envelope_id", "item_id", "invite_id", "client_id"],
  payer: ["from", "paid_by"],
  payee: ["to"],
  note: ["notes"],
  notes: ["note"],
  title: ["description", "subject"],
  body: ["body_md"],
  message: ["body_md", "note"],
  members: ["among", "invitees"],
  participants: ["among"],
};

/** The properties an object at `path` of the schema knows (through arrays and anyOf branches). */
export function fieldsAt(schema: Schema, path: readonly PropertyKey[]): string[] {
  let nodes: Schema[] = [schema];
  const expand = (list: Schema[]): Schema[] =>
    list.flatMap((n) => [n, ...expand(((n.anyOf ?? n.oneOf ?? []) as Schema[]).filter((b) => b && typeof b === "object"))]);
  for (const step of path) {
    nodes = expand(nodes).flatMap((n) => {
      if (typeof step === "number") return n.items && typeof n.items === "object" ? [n.items as Schema] : [];
      const props = (n.properties ?? {}) as Record<string, Schema>;
      return Object.hasOwn(props, String(step)) ? [props[String(step)]!] : [];
    });
  }
  return [...new Set(expand(nodes).flatMap((n) => Object.keys((n.properties as Schema | undefined) ?? {})))];
}

/** Edit distance (insertions, deletions, substitutions, adjacent swaps), for short field names. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The known field most likely meant by `key`, or null. */
export function nearestField(key: string, known: readonly string[]): string | null {
  const lower = key.toLowerCase();
  if (known.includes(lower)) return lower;
  // Own names only: a key such as "__proto__" names nothing here.
  const synonym = Object.hasOwn(SYNONYMS, lower) ? SYNONYMS[lower]!.find((s) => known.includes(s)) : undefined;
  if (synonym) return synonym;
  let best: { field: string; d: number } | null = null;
  for (const field of known) {
    const d = distance(lower, field);
    if (d <= Math.max(1, Math.floor(field.length / 3)) && (!best || d < best.d)) best = { field, d };
  }
  return best?.field ?? null;
}

/** The message for an unknown field: the one meant, or the ones there are. */
export function unknownField(key: string, known: readonly string[]): string {
  const meant = nearestField(key, known);
  if (meant) return `unknown field "${key}": did you mean ${meant}?`;
  return known.length ? `unknown field "${key}"; the fields here are ${known.join(", ")}` : `unknown field "${key}"`;
}
