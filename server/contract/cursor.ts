import { invalid } from "../errors.ts";

/** An opaque page cursor: the sort key of the last row returned. */
export const encodeCursor = (key: readonly (string | number)[]) => Buffer.from(JSON.stringify(key)).toString("base64url");

/** The sort key inside a cursor this service made, checked against the types the list expects. */
export function decodeCursor<const T extends readonly ("string" | "number")[]>(
  cursor: string,
  types: T,
): { [K in keyof T]: T[K] extends "number" ? number : string } {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, "base64url").toString());
  } catch {
    key = undefined;
  }
  if (!Array.isArray(key) || key.length !== types.length || key.some((v, i) => typeof v !== types[i])) {
    throw invalid("cursor", "not a cursor this tool returned; start again without cursor");
  }
  return key as { [K in keyof T]: T[K] extends "number" ? number : string };
}

/**
 * One page of a list: `fetch` runs the list's query for `n` rows, asked here for one more than `limit` because that
 * extra row, never shown, is how we know another page follows; `cursorOf` makes the cursor that continues after a row.
 */
export async function paginate<R>(
  limit: number,
  fetch: (n: number) => PromiseLike<R[]>,
  cursorOf: (last: R) => string,
): Promise<{ page: R[]; next_cursor: string | null }> {
  const rows = await fetch(limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { page, next_cursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
