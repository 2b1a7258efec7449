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
