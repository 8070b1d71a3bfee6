// `kvcr-mock bench --compare-layouts agg,disagg` against fresh stacks from the launcher's code (as
// `up`): each layout runs the same requests on its own stack of 4 workers (agg: 4 aggregated;
// disagg: 2 prefill + 2 decode, whose answers all come from the decode workers), stopped
// afterwards; the verdict comes first.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, runCli, tempDir } from "../harness.ts";

describe("bench --compare-layouts with fresh stacks", () => {
  test("agg and disagg run the same workload on stacks of as many workers; the verdict first, each stack stopped", async () => {
    using dir = tempDir("kvcr-bench-layouts-");
    const json = join(dir.path, "layouts.json");
    const r = await runCli(
      [
        "bench", "--compare-layouts", "agg,disagg", "--prefill-workers", "2", "--decode-workers", "2", "--stack-config", join(REPO_ROOT, "examples/bench-small-stack.yaml"), "--rounds", "1",
        "--requests", "24", "--concurrency", "4", "--num-prefixes", "2", "--prefix-tokens", "64", "--suffix-tokens", "16", "--output-tokens", "8", "--seed", "3",
        "--output-json", json, "--log-level", "warn",
      ],
      { timeoutMs: 150_000 },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe("Verdict:");
    expect(r.stdout).toMatch(/^ {2}disagg vs agg: mean TTFT/m);
    type Run = { label: string; completed: number; failed: number; per_worker: Record<string, number>; base_url: string };
    const doc = JSON.parse(readFileSync(json, "utf8")) as { verdict: { baseline: string; side: string }[]; runs: Run[] };
    expect(doc.runs.map((x) => [x.label, x.completed, x.failed])).toEqual([["agg", 24, 0], ["disagg", 24, 0]]);
    for (const v of doc.verdict) expect([v.baseline, v.side]).toEqual(["agg", "disagg"]);
    // Only the 2 decode workers answer a disaggregated request (the prefill workers' single tokens are not the client's).
    expect(Object.keys(doc.runs[1]!.per_worker).length).toBeLessThanOrEqual(2);
    expect(Object.values(doc.runs[1]!.per_worker).reduce((a, b) => a + b, 0)).toBe(24);
    for (const run of doc.runs) expect(await fetch(`${run.base_url}/health`).then(() => "answered", () => "gone")).toBe("gone");
  }, 180_000);
});
