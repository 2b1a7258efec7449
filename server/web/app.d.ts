// app.js is imported `with { type: "text" }`: its source, embedded in the compiled binary, served to browsers.
declare const source: string;
export default source;
