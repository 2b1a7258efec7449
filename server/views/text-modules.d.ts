// A style sheet imported `with { type: "text" }` is embedded in the compiled binary as a string.
declare module "*.css" {
  const text: string;
  export default text;
}
