// The compiled single binary, built once per test run and shared by every e2e file (bun test runs
// all files in one process), so CI pays for one `bun build --compile`, not one per file.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../harness.ts";

let built: Promise<string> | undefined;

/** Path of the binary (built on first call; removed when the test process exits). */
export function compiledBinary(): Promise<string> {
  return (built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "kvcr-bin-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    const bin = join(dir, "kvcr-mock");
    const build = Bun.spawn([process.execPath, join(REPO_ROOT, "scripts/build.ts"), bin], { stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(build.stderr).text(), build.exited]);
    if (code !== 0) throw new Error(`build failed: ${stderr}`);
    return bin;
  })());
}
