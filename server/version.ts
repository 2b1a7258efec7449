// The release, from package.json alone: the CLI's --version, the MCP servers and the OpenAPI description say it.
// The JSON is bundled into the compiled binary, so the executable needs no package.json beside it.
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
