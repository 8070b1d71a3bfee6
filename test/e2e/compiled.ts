// The compiled single binary, built once per test run and shared by every e2e file (bun test runs
// all files in one process), so CI pays for one `bun build --compile`, not one per file.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, spawnChild, testTempRoot } from "../harness.ts";

let built: Promise<string> | undefined;

/**
 * Path of the binary (built on first call). It lives in the harness's temp root, which is removed
 * when the test process ends (no e2e file knows whether a later one still needs it).
 */
export function compiledBinary(): Promise<string> {
  return (built ??= (async () => {
    const bin = join(mkdtempSync(join(testTempRoot(), "kvcr-bin-")), "kvcr-mock");
    await using build = spawnChild([process.execPath, join(REPO_ROOT, "scripts/build.ts"), bin], { stdout: "ignore" });
    const [stderr, code] = await Promise.all([new Response(build.proc.stderr).text(), build.proc.exited]);
    if (code !== 0) throw new Error(`build failed: ${stderr}`);
    return bin;
  })());
}
