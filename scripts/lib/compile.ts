// One compiled binary for one target, as `npm run build` (host) and `npm run release` (every
// target) make it: minified, bytecode where the target takes it, bunfig/.env autoloading off (the
// binary behaves the same in any directory), the build's commit defined in (lib/version.ts), and
// msgpackr's optional native extension replaced by nothing: bundled, its loader kept the build
// checkout's node_modules path and loaded the .node file from there when it existed, so the binary
// behaved differently on the machine that built it. msgpackr (off the wire path only: the `events`
// tap's view of payloads the wire decoder refuses; the wire codecs are our own) then runs its
// JavaScript decoder everywhere.
import { resolve } from "node:path";
import type { BunPlugin } from "bun";

export const ROOT = resolve(import.meta.dir, "../..");

const noNativeMsgpack: BunPlugin = {
  name: "no-native-msgpack",
  setup(build) {
    build.onResolve({ filter: /^msgpackr-extract$/ }, () => ({ path: "msgpackr-extract", namespace: "kvcr-empty" }));
    build.onLoad({ filter: /.*/, namespace: "kvcr-empty" }, () => ({ contents: "module.exports = undefined;", loader: "js" }));
  },
};

/** The commit the build names: short hash, `.dirty` when the tree has uncommitted changes; "unknown" outside git. */
export async function buildCommit(): Promise<string> {
  const git = (args: string[]) => Bun.spawnSync(["git", ...args], { cwd: ROOT, stderr: "ignore" });
  const head = git(["rev-parse", "--short=7", "HEAD"]);
  if (head.exitCode !== 0) return "unknown";
  const dirty = git(["status", "--porcelain", "--untracked-files=no"]).stdout.toString().trim() !== "";
  return `${head.stdout.toString().trim()}${dirty ? ".dirty" : ""}`;
}

export interface CompileOptions {
  outfile: string;
  /** Bun's compile target (`bun-linux-arm64`, …); the host when absent. */
  target?: string;
  commit: string;
  bytecode: boolean;
}

/** Builds one binary; throws with Bun's build log on failure. */
export async function compile(o: CompileOptions): Promise<void> {
  const result = await Bun.build({
    entrypoints: [resolve(ROOT, "src/cli.ts")],
    compile: { outfile: o.outfile, autoloadBunfig: false, autoloadDotenv: false, ...(o.target ? { target: o.target as never } : {}) },
    minify: true,
    bytecode: o.bytecode,
    format: "esm",
    define: { KVCR_BUILD_COMMIT: JSON.stringify(o.commit) },
    plugins: [noNativeMsgpack],
  });
  if (!result.success) throw new Error(`build of ${o.outfile} failed:\n${result.logs.map(String).join("\n")}`);
}
