import { describe, expect, test } from "bun:test";
import { extractLinks, linkTarget } from "../../server/domain/mail/links.ts";
import { LINK_CASES } from "./link-cases.ts";

describe("extractLinks: where each link really leads", () => {
  for (const c of LINK_CASES) {
    test(c.name, () => {
      const links = extractLinks(c.text);
      expect(links).toHaveLength(1);
      const l = links[0]!;
      expect(l.url).toBe(c.url);
      expect(l.domain).toBe(c.domain);
      expect(l.scheme).toBe(c.scheme);
      expect([...l.warnings].sort()).toEqual([...c.warnings].sort());
      if (c.domain_unicode !== undefined) expect(l.domain_unicode).toBe(c.domain_unicode);
      if (c.text_domain !== undefined) expect(l.text_domain).toBe(c.text_domain);
    });
  }

  test("all cases in one body come out in order of appearance", () => {
    const links = extractLinks(LINK_CASES.map((c) => c.text).join("\n"));
    expect(links.map((l) => l.url)).toEqual(LINK_CASES.map((c) => c.url));
  });

  test("a link written twice is listed once; the same URL behind different text is listed per text", () => {
    const links = extractLinks("https://a.example/ and https://a.example/ [b.example](https://a.example/)");
    expect(links.map((l) => [l.url, l.text_domain])).toEqual([
      ["https://a.example/", null],
      ["https://a.example/", "b.example"],
    ]);
  });

  test("trailing punctuation and unbalanced brackets are not part of a link", () => {
    expect(extractLinks("Go to https://x.example/a), then https://y.example/b]! or https://z.example/c?;").map((l) => l.url)).toEqual([
      "https://x.example/a",
      "https://y.example/b",
      "https://z.example/c",
    ]);
  });

  test("prose without links gives none; 'data:' followed by a space is not a link", () => {
    expect(extractLinks("No links here: just data: numbers, e.g. 3.14 and file.txt")).toEqual([]);
    expect(extractLinks("")).toEqual([]);
  });

  test("the unicode form equals the ASCII form for plain hosts; hosts without a name are null", () => {
    expect(linkTarget("https://example.com")).toEqual({ domain: "example.com", domain_unicode: "example.com", scheme: "https", warnings: [] });
    expect(linkTarget("file:///etc/passwd")).toEqual({ domain: null, domain_unicode: null, scheme: "file", warnings: ["non_web_scheme"] });
    expect(linkTarget("file://server.example/share")).toMatchObject({ domain: "server.example", warnings: ["non_web_scheme"] });
    expect(linkTarget("wss://ws.example/socket")).toMatchObject({ domain: "ws.example", warnings: ["non_web_scheme"] });
    expect(linkTarget("custom:///x")).toMatchObject({ domain: null, warnings: ["non_web_scheme"] });
    expect(linkTarget("https://exa mple.com").warnings).toContain("unparseable");
    expect(linkTarget("mailto:nobody").warnings).toEqual(["non_web_scheme", "unparseable"]);
    expect(linkTarget("https://user:pw@host.example/").warnings).toEqual(["userinfo"]);
    expect(linkTarget("steam://run/123")).toMatchObject({ domain: "run", scheme: "steam", warnings: ["non_web_scheme"] });
  });
});
