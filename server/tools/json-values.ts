// What JSON.parse can hand svc but svc could not keep as sent: a number past double range (1e999 parses as
// Infinity) and a string holding a lone surrogate ("\ud800" parses, but is stored as U+FFFD). Refused in every
// process before anything else, so that what remains crosses to another process (JSON over IPC) unchanged.
import { issuePath, type Issue } from "../errors.ts";

// In a u-mode class a paired surrogate is one code point outside this range: only a lone half matches.
const LONE_SURROGATE = /[\ud800-\udfff]/u;
const SURROGATE_MESSAGE = "must not contain a lone surrogate (text that is not valid Unicode)";

/**
 * The first value of raw svc would not keep as sent, as an issue naming where it is, or null. Walks without
 * recursion (arguments may nest deeper than the stack). A -0 is made 0 in place, as JSON would make it on the way
 * to another process: every process then reads the same number.
 */
export function unkeptValue(raw: unknown): Issue | null {
  // Each value keeps a link to its parent, not a copy of its path: a path is spelled only for the value refused.
  type Step = { v: unknown; key: string | number | null; up: Step | null };
  const at = (s: Step, last?: string) => {
    const path: (string | number)[] = last === undefined ? [] : [last];
    for (let e: Step | null = s; e && e.key !== null; e = e.up) path.unshift(e.key);
    return path.length ? issuePath(path) : "(arguments)";
  };
  const todo: Step[] = [{ v: raw, key: null, up: null }];
  for (let s = todo.pop(); s; s = todo.pop()) {
    const v = s.v;
    if (typeof v === "number" && !Number.isFinite(v)) return { path: at(s), message: "must be a finite number" };
    if (typeof v === "string" && LONE_SURROGATE.test(v)) return { path: at(s), message: SURROGATE_MESSAGE };
    if (v === null || typeof v !== "object") continue;
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      if (LONE_SURROGATE.test(k)) return { path: at(s, k), message: `name ${SURROGATE_MESSAGE}` };
      if (Object.is(o[k], -0)) o[k] = 0;
      todo.push({ v: o[k], key: Array.isArray(o) ? Number(k) : k, up: s });
    }
  }
  return null;
}
