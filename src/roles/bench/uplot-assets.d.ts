// uPlot's browser build and stylesheet, imported as text (`with { type: "text" }`) so the bundler
// inlines them into the binary and the HTML report works offline.
declare module "uplot/dist/uPlot.iife.min.js" {
  const text: string;
  export default text;
}
declare module "uplot/dist/uPlot.min.css" {
  const text: string;
  export default text;
}
