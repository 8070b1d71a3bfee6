// A .jsonl trace imported `with { type: "file" }` is its path (inside the compiled binary, an
// embedded file's path): builtin-traces.ts.
declare module "*.jsonl" {
  const path: string;
  export default path;
}
