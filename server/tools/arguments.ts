// A call's arguments as its tool takes them: parsed against the tool's live schema, with errors that name each
// field (and the field meant, for one it does not know).
import type { ZodError } from "zod";
import { AppError, issuePath, type Issue } from "../errors.ts";
import { inputJsonSchema } from "./catalogue.ts";
import type { Tool } from "./define.ts";
import { fieldsAt, unknownField } from "./unknown-fields.ts";

/** The issues of a failed parse; an unknown field is named with the field meant, when `schema` tells what is known there. */
export function zodIssues(err: ZodError, schema?: Record<string, unknown>): Issue[] {
  return err.issues.flatMap((i) => {
    const at = (path: PropertyKey[]) => (path.length ? issuePath(path) : "(arguments)");
    if (i.code !== "unrecognized_keys" || !schema) return [{ path: at(i.path), message: i.message }];
    const known = fieldsAt(schema, i.path);
    return i.keys.map((key) => ({ path: at(i.path), message: unknownField(key, known) }));
  });
}

/** zod's message for a field left out ("Invalid input: expected string, received undefined"), said as it is meant. */
const missingField = (iss: { code: string; input?: unknown; expected?: unknown }) =>
  iss.code === "invalid_type" && iss.input === undefined ? `required${typeof iss.expected === "string" ? ` (${iss.expected})` : ""}` : undefined;

export function validationError(issues: Issue[]): AppError {
  const named = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  return new AppError("VALIDATION_ERROR", `Invalid arguments: ${named}`, { issues });
}

/** Parses arguments against the tool's live schema, folding in the Idempotency-Key header. */
export function parseArguments(tool: Tool, raw: unknown, headerKey?: string | null): Record<string, unknown> {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw validationError([{ path: "(arguments)", message: "arguments must be a JSON object" }]);
  }
  const args = raw as Record<string, unknown>;
  if (tool.idempotent && headerKey) {
    if (args.idempotency_key !== undefined && args.idempotency_key !== headerKey) {
      throw validationError([{ path: "idempotency_key", message: "differs from the Idempotency-Key header; send one" }]);
    }
    args.idempotency_key = headerKey; // the request's own parsed body: no one else holds it
  }
  const parsed = tool.input.safeParse(args, { error: missingField });
  if (!parsed.success) throw validationError(zodIssues(parsed.error, inputJsonSchema(tool)));
  return parsed.data as Record<string, unknown>;
}
