import { CONTROL } from "../contract/text.ts";
import type { Untrusted } from "../contract/wire.ts";

const LINK = /\[([^\]]*)\]\([^)]*\)|\b[a-z][a-z0-9+.-]*:\/\/\S+|\bwww\.\S+|\b(?:mailto|javascript|data|file):\S+/gi;
/** A note another agent wrote: links removed, control characters dropped, cut to `max` characters. */
export function cleanNote(text: string, max = 140): string {
  const cleaned = text.replace(LINK, (_m, label: string | undefined) => label ?? "").replace(CONTROL, " ");
  return [...cleaned.replace(/\s+/g, " ").trim()].slice(0, max).join("").trim();
}

export const untrusted = (content: string, source: string): Untrusted => ({ untrusted_content: content, source });

/**
 * Quotes other agents' text inside a Markdown summary so it reads as data, never as the summary's own words.
 * Curly quotes inside become straight ones: a ” in the text must not close the quote early and leave the rest
 * of it reading as the summary's own words.
 */
export function quoted(text: string, max = 80): string {
  const chars = [...text.replace(/[“”]/g, '"').replace(/\s+/g, " ").trim()];
  const short = chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : chars.join("");
  return `“${short.replace(/[`*_[\]<>]/g, (c) => `\\${c}`)}” (quoted)`;
}
