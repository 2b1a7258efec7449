// MCP Apps views: self-contained HTML documents (ui:// resources, text/html;profile=mcp-app) that a host renders
// in a sandboxed frame next to a tool's answer. Each is one document: the shared style and the bridge to the host
// (bridge.html), then the view's own markup and script. Nothing is fetched: no scripts, fonts or images from outside.
import balances from "./balances.html" with { type: "text" };
import bridge from "./bridge.html" with { type: "text" };
import group from "./group.html" with { type: "text" };
import inbox from "./inbox.html" with { type: "text" };
import style from "./view.css" with { type: "text" };

export interface View {
  uri: string;
  name: string;
  title: string;
  description: string;
  html: string;
}

// Bun's types call an .html import a bundle; imported as text it is the file's text.
const text = (file: unknown) => file as string;

function view(name: string, title: string, description: string, body: string): View {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>${style}</style>
${text(bridge)}
</head>
<body>
${body}
</body>
</html>
`;
  return { uri: `ui://svc/${name}.html`, name, title, description, html };
}

export const BALANCES_VIEW = view("balances", "Balances", "A group's balances as a bar chart, with the transfers that settle it up.", text(balances));
export const GROUP_VIEW = view("group", "Group", "A group's members with their balances, and its recent expenses.", text(group));
export const INBOX_VIEW = view("inbox", "Inbox", "What waits for a decision, then the rest of the inbox.", text(inbox));

export const VIEWS: readonly View[] = [BALANCES_VIEW, GROUP_VIEW, INBOX_VIEW];
