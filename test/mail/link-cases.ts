// Tricky links and where they really lead: shared by the unit test of extractLinks and the HTTP test of get_envelope.
import type { LinkWarning } from "../../server/contract/mail.ts";

export interface LinkCase {
  name: string;
  /** One line of an envelope body holding exactly one link. */
  text: string;
  url: string;
  domain: string | null;
  domain_unicode?: string | null;
  scheme: string | null;
  text_domain?: string | null;
  warnings: LinkWarning[];
}

// biome-ignore format: a table, one case a line
export const LINK_CASES: LinkCase[] = [
  { name: "plain https", text: "see https://example.com/a?b=1.", url: "https://example.com/a?b=1", domain: "example.com", scheme: "https", warnings: [] },
  { name: "user-info trick", text: "log in at https://bank.com@evil.example/login", url: "https://bank.com@evil.example/login", domain: "evil.example", scheme: "https", warnings: ["userinfo"] },
  { name: "encoded slash in user-info", text: "https://bank.com%2F@evil.example/x", url: "https://bank.com%2F@evil.example/x", domain: "evil.example", scheme: "https", warnings: ["userinfo"] },
  { name: "backslash ends the host", text: "https://evil.example\\@bank.com/", url: "https://evil.example\\@bank.com/", domain: "evil.example", scheme: "https", warnings: [] },
  { name: "fragment after @", text: "https://evil.example#@bank.com", url: "https://evil.example#@bank.com", domain: "evil.example", scheme: "https", warnings: [] },
  { name: "Cyrillic look-alike (IDN)", text: "https://pаypal.com/signin", url: "https://pаypal.com/signin", domain: "xn--pypal-4ve.com", domain_unicode: "pаypal.com", scheme: "https", warnings: ["idn"] },
  { name: "punycode written out", text: "http://xn--mnchen-3ya.de/", url: "http://xn--mnchen-3ya.de/", domain: "xn--mnchen-3ya.de", domain_unicode: "münchen.de", scheme: "http", warnings: ["idn"] },
  { name: "full-width letters", text: "https://ｅｘａｍｐｌｅ.com/", url: "https://ｅｘａｍｐｌｅ.com/", domain: "example.com", scheme: "https", warnings: [] },
  { name: "ideographic full stop", text: "https://bank.com。evil.example/", url: "https://bank.com。evil.example/", domain: "bank.com.evil.example", scheme: "https", warnings: [] },
  { name: "upper-case scheme and host", text: "HTTPS://EXAMPLE.ORG/Path", url: "HTTPS://EXAMPLE.ORG/Path", domain: "example.org", scheme: "https", warnings: [] },
  { name: "hex IP address", text: "http://0x7f.1/admin", url: "http://0x7f.1/admin", domain: "127.0.0.1", scheme: "http", warnings: ["ip_address"] },
  { name: "decimal IP address", text: "http://2130706433/", url: "http://2130706433/", domain: "127.0.0.1", scheme: "http", warnings: ["ip_address"] },
  { name: "IPv6 literal", text: "https://[::1]:8080/x", url: "https://[::1]:8080/x", domain: "[::1]", scheme: "https", warnings: ["ip_address"] },
  { name: "javascript: scheme", text: "JavaScript:alert(document.cookie)", url: "JavaScript:alert(document.cookie)", domain: null, scheme: "javascript", warnings: ["script"] },
  { name: "javascript: behind Markdown text", text: "[open](javascript:alert(1))", url: "javascript:alert(1)", domain: null, scheme: "javascript", warnings: ["script"] },
  { name: "data: URL", text: "data:text/html;base64,PHNjcmlwdD4=", url: "data:text/html;base64,PHNjcmlwdD4=", domain: null, scheme: "data", warnings: ["data"] },
  { name: "defanged hxxp with [.]", text: "hxxp://evil[.]example/payload", url: "hxxp://evil[.]example/payload", domain: "evil.example", scheme: "hxxp", warnings: ["lookalike_scheme"] },
  { name: "h**ps look-alike", text: "h**ps://bad.example/", url: "h**ps://bad.example/", domain: "bad.example", scheme: "h**ps", warnings: ["lookalike_scheme"] },
  { name: "Markdown text shows another domain", text: "[https://bank.com](https://evil.example/x)", url: "https://evil.example/x", domain: "evil.example", scheme: "https", text_domain: "bank.com", warnings: ["text_shows_other_domain"] },
  { name: "Markdown text is a prefix of the real host", text: "[bank.com](https://bank.com.evil.example)", url: "https://bank.com.evil.example", domain: "bank.com.evil.example", scheme: "https", text_domain: "bank.com", warnings: ["text_shows_other_domain"] },
  { name: "Markdown text matches (subdomain)", text: "[bank.com](https://login.bank.com/)", url: "https://login.bank.com/", domain: "login.bank.com", scheme: "https", text_domain: "bank.com", warnings: [] },
  { name: "Markdown link with parentheses and title", text: "[wiki](https://en.wikipedia.org/wiki/Foo_(bar) \"title\")", url: "https://en.wikipedia.org/wiki/Foo_(bar)", domain: "en.wikipedia.org", scheme: "https", warnings: [] },
  { name: "bare www. link in parentheses", text: "(see www.example.net/page)", url: "www.example.net/page", domain: "www.example.net", scheme: null, warnings: ["no_scheme"] },
  { name: "autolink in angle brackets", text: "<https://auto.example/x>", url: "https://auto.example/x", domain: "auto.example", scheme: "https", warnings: [] },
  { name: "HTML anchor is not rendered, its href is listed", text: "<a href=\"https://evil.example/\">bank.com</a>", url: "https://evil.example/", domain: "evil.example", scheme: "https", warnings: [] },
  { name: "mailto", text: "mailto:bob@mail.example?subject=hi", url: "mailto:bob@mail.example?subject=hi", domain: "mail.example", scheme: "mailto", warnings: ["non_web_scheme"] },
  { name: "ftp", text: "ftp://files.example/x", url: "ftp://files.example/x", domain: "files.example", scheme: "ftp", warnings: ["non_web_scheme"] },
  { name: "bold around a link", text: "**https://bold.example/a**", url: "https://bold.example/a", domain: "bold.example", scheme: "https", warnings: [] },
];
