// Builds the single executable bin/svc (or the path given as the first argument). libsql picks its native addon with a computed require(),
// which the bundler cannot follow; pointing it at this machine's addon lets the binary embed it.
import type { BunPlugin } from "bun";
import { fieldsOf } from "../cli/tool-fields.ts";
import { TOOLS, inputJsonSchema } from "../server/tools/catalogue.ts";

const target =
  `${process.platform}-${process.arch}-${process.platform === "linux" ? ((process.report?.getReport() as any)?.header?.glibcVersionRuntime ? "gnu" : "musl") : ""}`.replace(
    /-$/,
    "",
  );

const embedLibsqlAddon: BunPlugin = {
  name: "embed-libsql-addon",
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]libsql[\\/]index\.js$/ }, async (args) => {
      const source = await Bun.file(args.path).text();
      // The addon is embedded as a file and loaded by db/native-addon.ts, which copes with a noexec $TMPDIR.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of libsql's source, placeholder included
      const patched = source.replace("return require(`@libsql/${target}`);", `return require("svc:libsql-addon").default();`);
      if (patched === source) throw new Error("libsql's native loader changed; update scripts/build.ts");
      return { contents: patched, loader: "js" };
    });
    build.onResolve({ filter: /^svc:libsql-addon$/ }, () => ({ path: "libsql-addon", namespace: "svc" }));
    build.onLoad({ filter: /^libsql-addon$/, namespace: "svc" }, () => ({
      contents:
        `import file from "@libsql/${target}/index.node" with { type: "file" };\n` +
        `import { loadAddon } from ${JSON.stringify(new URL("../db/native-addon.ts", import.meta.url).pathname)};\n` +
        "export default () => loadAddon(file);\n",
      loader: "js",
      resolveDir: process.cwd(),
    }));
  },
};

const outfile = process.argv[2] ?? "bin/svc";
const result = await Bun.build({
  // The replica's sync thread is an entrypoint of its own: a compiled program carries only the workers it lists.
  entrypoints: ["cli/main.ts", "db/replica-sync.worker.ts"],
  compile: { outfile },
  minify: true,
  // Start-up: bytecode spares parsing the whole bundle at every start (~0.1 s of svc --version), and the tools'
  // names and fields are built in (cli/tool-fields.ts) so completion need not load the catalogue.
  bytecode: true,
  format: "esm",
  define: { SVC_TOOL_FIELDS: JSON.stringify(fieldsOf(TOOLS, inputJsonSchema)) },
  plugins: [embedLibsqlAddon],
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.error(`build: ${outfile} for ${target}`);
