// Builds the single binary for this machine (default dist/kvcr-mock; `bun scripts/build.ts OUTFILE`
// to choose). How a binary is made: scripts/lib/compile.ts; every target: scripts/release.ts.
import { resolve } from "node:path";
import { buildCommit, compile, ROOT } from "./lib/compile.ts";

const outfile = resolve(process.argv[2] ?? resolve(ROOT, "dist/kvcr-mock"));
try {
  await compile({ outfile, commit: await buildCommit(), bytecode: true });
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
console.log(`built ${outfile}`);
