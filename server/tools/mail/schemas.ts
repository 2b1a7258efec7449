// Wire shapes of envelopes, shared by the four mail tools.
import { z } from "zod";
import { LINK_WARNINGS } from "../../domain/mail/links.ts";
import { AgentRef, plainText, Timestamp, Untrusted, Uuid } from "../schemas.ts";

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
