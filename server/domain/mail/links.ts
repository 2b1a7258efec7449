// Finds every link in an envelope body and names the domain it really leads to, so an agent can show
// the human where a link goes before anyone opens it. Hosts come from the WHATWG URL parser (what a
// browser would do), never from reading the text by eye.
import { domainToUnicode } from "node:url";
import type { LinkWarning } from "../../contract/mail.ts";

export interface Link {
  /** The link as written in the body. */
  url: string;
  /** Where it leads: the ASCII (punycode) host, lowercase; null when it has no host. */
  domain: string | null;
  /** The same host in Unicode, to compare with `domain`; null when it has no host. */
  domain_unicode: string | null;
  /** The scheme as written, lowercase; null for a bare www. link. */
  scheme: string | null;
  /** For a Markdown link, the domain its visible text shows, if any. */
  text_domain: string | null;
  warnings: LinkWarning[];
}

// [text](destination "title"), also images; a destination may hold one level of balanced parentheses.
const MARKDOWN_LINK = /!?\[([^\]\n]{0,1000})\]\(\s*(<[^>\n]*>|(?:[^\s()]|\([^\s()]*\))+)(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^)\n]*\)))?\s*\)/g;
// scheme://..., the schemes that need no //, and bare www.; `*` lets disguised schemes such as h**ps:// through.
const BARE_LINK = /\b(?:[a-z][a-z0-9+.*-]{0,30}:\/\/|(?:javascript|vbscript|data|mailto|file|blob):(?=\S)|www\.(?=\S))[^\s<>"'`]*/gi;
const TRAILING = /[.,;:!?*_~'"]$/;
// Things that read as a domain inside link text: "bank.com", "https://bank.com/login", "paypal.com".
const TEXT_DOMAIN = /(?:[a-z][a-z0-9+.-]*:\/\/)?(?:[^\s@/:]+@)?((?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?[.。．｡])+\p{L}[\p{L}\p{N}-]+)/iu;
// Common disguises of http(s): hxxp, hxxps, h**p, htp, ttps, htttp...
const LOOKALIKE_SCHEME = /^h?[tx*]{1,3}ps?$/;
const SPECIAL_SCHEMES = new Set(["ftp", "ws", "wss", "file"]);
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

interface Target {
  domain: string | null;
  domain_unicode: string | null;
  scheme: string | null;
  warnings: LinkWarning[];
}

/** Every link in a Markdown body in order of appearance, each once, with the domain it leads to. */
export function extractLinks(body: string): Link[] {
  const found: { at: number; link: Link }[] = [];
  // Markdown links first; their spans are blanked out so the bare scan does not count them twice.
  let masked = body;
  for (const m of body.matchAll(MARKDOWN_LINK)) {
    const dest = m[2]!.startsWith("<") ? m[2]!.slice(1, -1).trim() : m[2]!;
    if (!dest) continue;
    const target = linkTarget(dest);
    const textDomain = domainInText(m[1]!);
    const warnings = [...target.warnings];
    if (textDomain && !sameSite(textDomain, target.domain)) warnings.push("text_shows_other_domain");
    found.push({ at: m.index, link: { url: dest, ...target, text_domain: textDomain, warnings } });
    masked = masked.slice(0, m.index) + " ".repeat(m[0].length) + masked.slice(m.index + m[0].length);
  }
  for (const m of masked.matchAll(BARE_LINK)) {
    const url = trimTrailing(m[0]);
    if (url.length < 5) continue;
    found.push({ at: m.index, link: { url, ...linkTarget(url), text_domain: null } });
  }
  const seen = new Set<string>();
  return found
    .sort((a, b) => a.at - b.at)
    .map((f) => f.link)
    .filter((l) => {
      const k = `${l.url}\n${l.text_domain ?? ""}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
}

/** Where one link leads, read the way a browser reads it. */
export function linkTarget(raw: string): Target {
  const m = /^([a-z][a-z0-9+.*-]*):/i.exec(raw);
  if (!m) {
    const t = hostOf(`http://${raw}`);
    return { ...t, scheme: null, warnings: ["no_scheme", ...t.warnings] };
  }
  const scheme = m[1]!.toLowerCase();
  const rest = raw.slice(m[0].length);
  const none = (warnings: LinkWarning[]): Target => ({ domain: null, domain_unicode: null, scheme, warnings });
  if (scheme === "http" || scheme === "https") return { ...hostOf(raw), scheme };
  if (scheme === "javascript" || scheme === "vbscript") return none(["script"]);
  if (scheme === "data") return none(["data"]);
  if (LOOKALIKE_SCHEME.test(scheme)) {
    // Defanged hosts write dots as [.] or (.); undo that to name the real domain.
    const t = hostOf(`${scheme.endsWith("s") ? "https" : "http"}:${rest.replace(/\[\.\]|\(\.\)/g, ".")}`);
    return { ...t, scheme, warnings: ["lookalike_scheme", ...t.warnings] };
  }
  if (scheme === "mailto") {
    const address = rest.split(/[?,]/)[0] ?? "";
    const at = address.lastIndexOf("@");
    if (at < 0) return none(["non_web_scheme", "unparseable"]);
    const t = hostOf(`http://${address.slice(at + 1)}`);
    return { ...t, scheme, warnings: ["non_web_scheme", ...t.warnings] };
  }
  // ftp, ws, wss and file have hosts the parser knows; other schemes' hosts are read as a browser reads a web
  // host, so IDN and IP tricks show the same way.
  const special = SPECIAL_SCHEMES.has(scheme);
  if (!special && !/^\/\/[^/\\]/.test(rest)) return none(["non_web_scheme"]);
  const t = hostOf(special ? raw : `http:${rest}`);
  return { ...t, scheme, warnings: ["non_web_scheme", ...t.warnings] };
}

function hostOf(href: string): Omit<Target, "scheme"> {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return { domain: null, domain_unicode: null, warnings: ["unparseable"] };
  }
  const host = url.hostname;
  // Only schemes such as file: allow an empty host (a local path).
  if (!host) return { domain: null, domain_unicode: null, warnings: [] };
  const warnings: LinkWarning[] = [];
  if (url.username || url.password) warnings.push("userinfo");
  const isIp = IPV4.test(host) || host.startsWith("[");
  if (isIp) warnings.push("ip_address");
  if (!isIp && host.split(".").some((label) => label.startsWith("xn--"))) warnings.push("idn");
  return { domain: host, domain_unicode: isIp ? host : domainToUnicode(host) || host, warnings };
}

function trimTrailing(url: string): string {
  let u = url;
  for (;;) {
    if (TRAILING.test(u)) u = u.slice(0, -1);
    else if (u.endsWith(")") && count(u, "(") < count(u, ")")) u = u.slice(0, -1);
    else if (u.endsWith("]") && count(u, "[") < count(u, "]")) u = u.slice(0, -1);
    else return u;
  }
}

const count = (s: string, c: string) => s.split(c).length - 1;

function domainInText(text: string): string | null {
  const m = TEXT_DOMAIN.exec(text);
  if (!m) return null;
  return hostOf(`http://${m[1]}`).domain;
}

/** The target is the shown domain or a subdomain of it; a leading www. on either side does not count. */
function sameSite(shown: string, actual: string | null): boolean {
  if (actual === null) return false;
  const [s, a] = [shown.replace(/^www\./, ""), actual.replace(/^www\./, "")];
  return a === s || a.endsWith(`.${s}`);
}
