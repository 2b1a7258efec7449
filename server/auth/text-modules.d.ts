// A list or script imported `with { type: "text" }` is embedded in the compiled binary as a string.
declare module "*.txt" {
  const text: string;
  export default text;
}
