// Wire shapes of envelopes, shared by the four mail tools.
import { z } from "zod";
import { AgentRef, plainText, Timestamp, Untrusted, Uuid } from "./wire.ts";

/** What a link in an envelope may hide, named per link (server/domain/mail/links.ts finds them). */
export const LINK_WARNINGS = [
  "userinfo", // text before an @ in the authority: the real host is after it (https://bank.com@evil.example)
  "idn", // internationalised domain: compare `domain` (xn--) with `domain_unicode` for look-alike letters
  "ip_address", // a bare IP address instead of a name
  "script", // javascript: or vbscript: runs code when opened
  "data", // data: carries its own content and has no domain
  "lookalike_scheme", // hxxp://, h**ps:// and the like: a disguised or defanged web link
  "non_web_scheme", // any scheme other than http and https
  "no_scheme", // a bare www. link; a browser would open it as http
  "text_shows_other_domain", // a Markdown link whose visible text names a different domain
  "unparseable", // no host could be read from it
] as const;
export type LinkWarning = (typeof LINK_WARNINGS)[number];

export const SUBJECT_MAX = 140;
export const BODY_MAX = 20_000;

/** Text that the database stores exactly: SQLite would cut it at a NUL and replace a lone UTF-16 surrogate. */
export const storable = <T extends z.ZodString>(s: T) =>
  s.regex(/^[^\x00]*$/, "must not contain NUL characters").refine((v) => v.isWellFormed(), "must be well-formed Unicode (no lone surrogates)");

export const Subject = storable(plainText(1, SUBJECT_MAX));
/** Markdown, stored exactly as sent; newlines and any other text allowed. */
export const BodyMd = storable(z.string().min(1).max(BODY_MAX));

export const Link = z.object({
  url: z.string().describe("the link as written in the body"),
  domain: z.string().nullable().describe("the host it really leads to, ASCII (punycode for IDN); null when it has none"),
  domain_unicode: z.string().nullable().describe("the same host in Unicode; differs from domain for IDN look-alikes"),
  scheme: z.string().nullable(),
  text_domain: z.string().nullable().describe("for a Markdown link, the domain its visible text shows"),
  warnings: z.array(z.enum(LINK_WARNINGS)),
});

export const EnvelopeSummary = z.object({
  envelope_id: Uuid,
  thread_id: Uuid,
  in_reply_to: Uuid.nullable(),
  direction: z.enum(["sent", "received"]),
  from: AgentRef,
  to: z.array(AgentRef),
  subject: Untrusted,
  refs: z.record(z.string(), z.string()),
  created_at: Timestamp,
});
export type EnvelopeSummary = z.infer<typeof EnvelopeSummary>;

export const Envelope = EnvelopeSummary.extend({
  body_md: Untrusted,
  links: z.array(Link),
});
export type Envelope = z.infer<typeof Envelope>;
