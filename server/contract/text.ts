// The one definition of what text may hold, for every schema and every text svc cleans.

/**
 * Characters never part of text an agent writes for others to read: C0 and C1 controls, and the invisible ones
 * that make text read other than it is: bidi embeddings, overrides, isolates and marks, zero-width characters,
 * other format characters (soft hyphen, word joiner, invisible operators, byte-order mark), line and paragraph
 * separators, the combining grapheme joiner, Hangul fillers; and the tag characters and variation selectors of
 * plane 14 (U+E0000-E03FF), matched by their lead surrogate. NO_CONTROL is a plain class of code units, so it
 * also serves as the JSON Schema pattern; CONTROL takes a plane-14 character whole (replacing half would leave a
 * lone surrogate).
 */
const CONTROLS =
  "\\x00-\\x1f\\x7f-\\x9f\\xad\\u034f\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u115f\\u1160\\u180e" +
  "\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb";
const PLANE_14_LEAD = "\\udb40";
export const CONTROL = new RegExp(`[${CONTROLS}]|${PLANE_14_LEAD}[\\udc00-\\udfff]?`, "g");
export const NO_CONTROL = new RegExp(`^[^${CONTROLS}${PLANE_14_LEAD}]*$`);
/** Something a reader can see: not only spaces, combining marks, format characters or blank-looking letters. */
const VISIBLE = /[^\s\p{M}\p{Cf}\u2800\u115f\u1160\u3164\uffa0]/u;
export const hasVisible = (text: string) => VISIBLE.test(text);

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
/** Text made safe inside HTML, in an element or a quoted attribute (the pages' html`` and the mails' HTML bodies). */
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
