// `kvcr-mock bench` from the command line: a bad --faults file is refused before anything is sent
// (exit 2, naming the entry and field); --compare prints two result files side by side and runs
// nothing; a missing file to compare is named (exit 1).
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli, tempDir } from "../harness.ts";

describe("bench --faults / --compare on the command line", () => {
  test("a bad schedule: exit 2, every problem named, nothing sent", async () => {
    using dir = tempDir("kvcr-bench-cli-");
    const bad = join(dir.path, "bad.json");
    writeFileSync(bad, JSON.stringify([{ at: "5s", target: "worker 0", fault: { kind: "latency", ttft_ms: -1 } }, { at: 1, target: "router", fault: "kill" }]));
    const r = await runCli(["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--faults", bad]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`--faults ${bad}: entry 1: fault.ttft_ms`);
    expect(r.stderr).toContain(`--faults ${bad}: entry 2: target: got "router"`);
    const missing = await runCli(["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--faults", join(dir.path, "nope.yaml")]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain(`--faults ${join(dir.path, "nope.yaml")}: cannot read it`);
  });

  test("--compare: a side-by-side table of two results", async () => {
    using dir = tempDir("kvcr-bench-cli-");
    const result = (completed: number) => JSON.stringify({ completed, failed: 0, duration: 1, request_throughput: completed, output_throughput: 1, mean_ttft_ms: 1, p99_ttft_ms: 2, mean_itl_ms: 1, p99_e2el_ms: 3, prefix_cache_reuse_ratio: null, error_breakdown: {} });
    const [a, b] = [join(dir.path, "a.json"), join(dir.path, "b.json")];
    writeFileSync(a, result(10));
    writeFileSync(b, result(12));
    const r = await runCli(["bench", "--compare", `${a},${b}`]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^completed \/ failed +10 \/ 0 +12 \/ 0$/m);
    const gone = await runCli(["bench", "--compare", `${a},${join(dir.path, "gone.json")}`]);
    expect(gone.exitCode).toBe(1);
    expect(gone.stderr).toContain(`--compare: cannot read ${join(dir.path, "gone.json")} as a bench result`);
  });
});
