// Markdown files imported `with { type: "text" }` are embedded in the compiled binary as strings.
declare module "*.md" {
  const text: string;
  export default text;
}
