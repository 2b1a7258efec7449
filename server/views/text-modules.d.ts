// View sources imported `with { type: "text" }` are embedded in the compiled binary as strings.
declare module "*.html" {
  const text: string;
  export default text;
}
declare module "*.css" {
  const text: string;
  export default text;
}
