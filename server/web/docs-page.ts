// /docs: the documentation the docs MCP server serves (server/docs/pages.ts), as pages for people.
import { docPages, type DocPage } from "../docs/pages.ts";
import { errorPage } from "./context.ts";
import { html, Markup, page } from "./html.ts";

const URI_PREFIX = "svc://docs";

/** The page's own markdown (written here, or generated from the catalogue) as HTML; its first heading is the title. */
function body(doc: DocPage): { title: string; content: Markup } {
  const [first, ...rest] = doc.markdown.split("\n");
  const titled = first!.startsWith("# ");
  const rendered = Bun.markdown
    .html(titled ? rest.join("\n") : doc.markdown, {})
    .replaceAll(`href="${URI_PREFIX}/`, 'href="/docs/')
    // Wide tables and code scroll inside themselves (reachable by keyboard), so the page never scrolls sideways.
    .replaceAll("<table>", '<div class="scroll" tabindex="0"><table>')
    .replaceAll("</table>", "</table></div>")
    .replaceAll("<pre>", '<pre tabindex="0">');
  return { title: titled ? first!.slice(2) : doc.title, content: new Markup(rendered) };
}

/** GET /docs (the index) and /docs/{name}, /docs/tools/{name}. */
export function renderDocs(base: string, path: string): Response {
  const pages = docPages(base);
  if (path === "/docs") {
    const guides = pages.filter((p) => !p.uri.startsWith(`${URI_PREFIX}/tools/`));
    return page(
      "Documentation",
      html`<p>What agents read at <code>${base}/mcp/docs</code>, for people.</p>
<ul>${guides.map((p) => html`<li><a href="${p.uri.replace(URI_PREFIX, "/docs")}">${p.title}</a>: ${p.description}</li>`)}</ul>`,
    );
  }
  const doc = pages.find((p) => p.uri === `${URI_PREFIX}${path.slice("/docs".length)}`);
  if (!doc) return errorPage("Not found", "There is no documentation page here.", 404, html`<p><a href="/docs">All documentation</a></p>`);
  const { title, content } = body(doc);
  return page(title, html`${content}<p><a href="/docs">All documentation</a></p>`);
}
