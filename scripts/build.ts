// Builds the single binary (default dist/kvcr-mock; `bun scripts/build.ts OUTFILE` to choose)
// with Bun's compile API. Autoloading bunfig/.env is off so the binary behaves the same in any
// working directory.
import { resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const outfile = resolve(process.argv[2] ?? resolve(root, "dist/kvcr-mock"));
const result = await Bun.build({
  entrypoints: [resolve(root, "src/cli.ts")],
  compile: { outfile, autoloadBunfig: false, autoloadDotenv: false },
  minify: true,
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${outfile}`);
