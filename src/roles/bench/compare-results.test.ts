// `bench --compare A.json,B.json`: two result files (one run, or several) side by side, the audit's
// figures where a result has them, "-" where not; a file that is not a result is named.
import { describe, expect, test } from "bun:test";
import { compareResults } from "./compare-results.ts";

const base = { completed: 10, failed: 0, duration: 2, request_throughput: 5, output_throughput: 40, mean_ttft_ms: 12, p99_ttft_ms: 30, mean_itl_ms: 3, p99_e2el_ms: 80, prefix_cache_reuse_ratio: 0.5, error_breakdown: {} };
const faulted = {
  ...base,
  failed: 2,
  error_breakdown: { "503": 2 },
  faults: [{ entry: 1 }, { entry: 2, error: "x" }],
  audit: { points: [{ precision: 1, recall: 0.9 }, { precision: 0.95, recall: 1 }] },
  recovery_s: [{ recovery_s: 1.25 }, { recovery_s: 0.5 }],
  regret: { best_cache_share: 0.9, mean_blocks: 1.5, p99_blocks: 6 },
};

describe("compareResults", () => {
  test("headline figures side by side", () => {
    const files: Record<string, string> = { "a.json": JSON.stringify(base), "b.json": JSON.stringify({ runs: [faulted, { ...base, label: "rr" }] }) };
    const { text: out, json } = compareResults(["a.json", "b.json"], (p) => files[p]!);
    expect(out).toMatch(/^ +a\.json +b\.json \(run\) +b\.json \(rr\)$/m);
    expect(out).toMatch(/^completed \/ failed +10 \/ 0 +10 \/ 2 +10 \/ 0$/m);
    expect(out).toMatch(/^errors +- +503:2 +-$/m);
    expect(out).toMatch(/^faults applied +- +1 +-$/m);
    expect(out).toMatch(/^worst index precision +- +0\.9500 +-$/m);
    expect(out).toMatch(/^worst index recall +- +0\.9000 +-$/m);
    expect(out).toMatch(/^slowest recovery \(s\) +- +1\.25 +-$/m);
    expect(out).toMatch(/^regret: mean \/ p99 blocks +- +1\.50 \/ 6\.00 +-$/m);
    // No per-request arrays: no verdict, in the text and in the JSON, with the reason.
    expect(out).toStartWith("No verdict: a.json and b.json have no per-request arrays");
    expect(json).toEqual({ compare: ["a.json", "b.json"], columns: ["a.json", "b.json (run)", "b.json (rr)"], verdict: null, no_verdict: expect.stringContaining("run bench with --save-detailed") });
  });

  test("one file twice is one side: no verdict, and it says why", () => {
    const { text, json } = compareResults(["a.json", "a.json"], () => JSON.stringify({ ...base, ttfts: [0.1], itls: [[]], output_lens: [1], input_lens: [8], errors: [""] }));
    expect(text).toStartWith("No verdict: both files give one side");
    expect(json.verdict).toBeNull();
  });

  test("a file that is not a result, or not JSON, is named", () => {
    expect(() => compareResults(["a.json", "b.json"], (p) => (p === "a.json" ? JSON.stringify(base) : "{}"))).toThrow("--compare: b.json is not a bench --output-json result");
    expect(() => compareResults(["a.json", "b.json"], () => "nope")).toThrow(/--compare: cannot read a\.json as a bench result/);
  });
});
