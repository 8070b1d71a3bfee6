// `kvcr-mock replay` as a user runs it (a real process through src/cli.ts): both shared traces
// (sliced to keep the suite fast), the synthetic workload, bad traces and bad flags.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, runCli, tempDir } from "../harness.ts";

const dir = tempDir("kvcr-replay-");
afterAll(() => dir[Symbol.dispose]());
const conversation = join(REPO_ROOT, "traces/mooncake_conversation_trace.jsonl");
const synthetic = join(REPO_ROOT, "traces/mooncake_synthetic_trace.jsonl");
const REPORT_KEYS = [
  "completed", "failed", "duration", "request_throughput", "output_throughput", "total_token_throughput",
  ...["ttft", "tpot", "itl", "e2el"].flatMap((m) => ["mean", "median", "p50", "p90", "p99"].map((s) => `${s}_${m}_ms`)),
  "prefix_cache_reuse_ratio", "requests_per_worker", "wall_time_s", "simulated_time_s",
];

describe("kvcr-mock replay", () => {
  test("conversation trace (first 300 requests), 4 workers, kv routing: table and JSON report", async () => {
    const json = join(dir.path, "conv.json");
    const r = await runCli(["replay", "--trace", conversation, "--requests", "300", "--num-workers", "4", "--router-mode", "kv", "--block-size", "512", "--output-json", json]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("Successful requests:                    300");
    expect(r.stdout).toContain("Prefix cache reuse ratio:");
    expect(r.stdout).toContain("Simulated time (s):");
    const report = JSON.parse(readFileSync(json, "utf8"));
    for (const k of REPORT_KEYS) expect(report).toHaveProperty(k);
    expect(report).toMatchObject({ completed: 300, failed: 0, num_workers: 4, router_mode: "kv" });
    expect(report.requests_per_worker.reduce((a: number, b: number) => a + b)).toBe(300);
    expect(report.prefix_cache_reuse_ratio).toBeGreaterThan(0.03); // at most 0.081 in this slice (1 worker, no eviction)
    expect(report.mean_ttft_ms).toBeGreaterThan(0);
    expect(report.simulated_time_s).toBeGreaterThan(80); // the slice's timestamps span ~90 s
  });

  test("synthetic trace (first 200 requests), defaults, round-robin, JSON on stdout", async () => {
    const r = await runCli(["replay", "--trace", synthetic, "--requests", "200", "--num-workers", "2", "--router-mode", "round-robin", "--output-json", "-", "--log-level", "warn"]);
    expect(r.exitCode).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ completed: 200, failed: 0, requests_per_worker: [100, 100] });
    expect(report.total_input_tokens).toBeGreaterThan(200 * 1000);
  });

  test("--num-workers 2 --data-parallel-size 3: 2 workers of 3 ranks, not 6 workers", async () => {
    const r = await runCli(["replay", "--requests", "30", "--num-workers", "2", "--data-parallel-size", "3", "--router-mode", "round-robin", "--prefix-tokens", "64", "--suffix-tokens", "8", "--output-tokens", "2", "--log-level", "warn"]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/Workers × ranks \/ router:\s+2 × 3 \/ round-robin/);
    expect(r.stdout).toMatch(/Requests per worker:\s+15 15\n/);
    expect(r.stdout).toMatch(/Requests per rank:\s+5 5 5 5 5 5\n/);
  });

  test("synthetic shared-prefix workload, closed loop, host tier and engine flags", async () => {
    const r = await runCli([
      "replay", "--num-prefixes", "4", "--prefix-tokens", "1024", "--suffix-tokens", "128", "--output-tokens", "32", "--requests", "120",
      "--concurrency", "16", "--num-workers", "2", "--num-gpu-blocks-override", "64", "--num-host-blocks", "256",
      "--max-num-seqs", "8", "--max-num-batched-tokens", "2048", "--preemption-mode", "fifo", "--seed", "3", "--output-json", "-",
    ]);
    expect(r.exitCode).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.completed).toBe(120);
    expect(report.prefix_cache_reuse_ratio).toBeGreaterThan(0.5);
    expect(report.host_loaded_tokens).toBeGreaterThan(0); // 64 G1 blocks are too few: prefixes come back from G2
  });

  test("a trace with bad lines stops before simulating, naming each line, unless --skip-bad-lines", async () => {
    const bad = join(dir.path, "bad.jsonl");
    writeFileSync(bad, [
      JSON.stringify({ timestamp: 0, input_length: 600, output_length: 4, hash_ids: [1, 2] }),
      "{broken",
      JSON.stringify({ timestamp: 1, input_length: 2000, output_length: 4, hash_ids: [1, 2] }),
      JSON.stringify({ timestamp: 2, input_length: 100, output_length: -1, hash_ids: [3] }),
      JSON.stringify({ timestamp: 3, input_length: 100, hash_ids: [3] }),
    ].join("\n"));
    const stop = await runCli(["replay", "--trace", bad]);
    expect(stop.exitCode).toBe(1);
    expect(stop.stderr).toContain("4 bad line(s)");
    expect(stop.stderr).toContain(`${bad}:2: invalid JSON`);
    expect(stop.stderr).toContain(`${bad}:3: input_length 2000 is longer than its 2 hash ids allow`);
    expect(stop.stderr).toContain(`${bad}:4: output_length must not be negative, got -1`);
    expect(stop.stderr).toContain(`${bad}:5: missing field output_length`);
    expect(stop.stdout).not.toContain("Successful requests");
    const go = await runCli(["replay", "--trace", bad, "--skip-bad-lines", "--output-json", "-"]);
    expect(go.exitCode).toBe(0);
    expect(JSON.parse(go.stdout).completed).toBe(1);
    expect(go.stderr).toContain("skipping 4 bad line(s)");
  });

  test("bad flags (exit 2) and a missing trace (exit 1) are refused up front, one line per problem", async () => {
    const r = await runCli(["replay", "--router-mode", "best", "--num-workers", "0"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("--router-mode: got \"best\", expected one of kv, round-robin, random");
    expect(r.stderr).toContain("--num-workers: got 0, expected an integer");
    const both = await runCli(["replay", "--concurrency", "2", "--request-rate", "5"]);
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toContain("choose one arrival mode");
    const host = await runCli(["replay", "--num-host-blocks", "8", "--no-enable-prefix-caching"]);
    expect(host.exitCode).toBe(2);
    expect(host.stderr).toContain("requires prefix caching");
    // A block count past what a tier can address is a config error, not an allocation crash.
    const huge = await runCli(["replay", "--num-host-blocks", "3e9", "--num-gpu-blocks-override", "4294967296"]);
    expect(huge.exitCode).toBe(2);
    expect(huge.stderr).toContain("--num-host-blocks: got 3000000000, expected an integer from 0 to 2147483647");
    expect(huge.stderr).toContain("--num-gpu-blocks-override: got 4294967296, expected an integer from 1 to 2147483647");
    expect(huge.stderr).not.toContain("    at ");
    // A seed it cannot honour exactly (beyond 2^53 − 1) is refused, not rounded or truncated.
    const seed = await runCli(["replay", "--seed", "18446744073709551615"]);
    expect(seed.exitCode).toBe(2);
    expect(seed.stderr).toContain("--seed: got 18446744073709552000, expected an integer from 0 to 9007199254740991");
    const missing = await runCli(["replay", "--trace", join(dir.path, "none.jsonl")]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain("cannot read --trace");
  });

  test("exit status: 1 when no request completed (reason on stderr), 0 with partial failures", async () => {
    const none = await runCli(["replay", "--requests", "3", "--prefix-tokens", "64", "--suffix-tokens", "0", "--output-tokens", "1", "--block-size", "16", "--num-gpu-blocks-override", "2"]);
    expect(none.exitCode).toBe(1);
    expect(none.stdout).toContain("Failed requests:                        3");
    expect(none.stderr).toContain("no request completed: all 3 failed (first: request 0: prompt (64) + max tokens (1) need 4 KV blocks, more than the 2 this rank has)");
    const mixed = join(dir.path, "mixed.jsonl");
    writeFileSync(mixed, [
      JSON.stringify({ timestamp: 0, input_length: 30, output_length: 2, hash_ids: [1] }),
      JSON.stringify({ timestamp: 1, input_length: 100, output_length: 2, hash_ids: [1, 2, 3, 4] }),
    ].join("\n"));
    const some = await runCli(["replay", "--trace", mixed, "--trace-block-size", "32", "--block-size", "16", "--num-gpu-blocks-override", "3", "--output-json", "-"]);
    expect(some.exitCode).toBe(0);
    expect(JSON.parse(some.stdout)).toMatchObject({ completed: 1, failed: 1 });
    expect(some.stderr).toContain("1 of 2 requests failed");
  });

  test("an unwritable --output-json (missing folder, a directory) exits 1 before simulating", async () => {
    const r = await runCli(["replay", "--trace", conversation, "--num-workers", "8", "--output-json", join(dir.path, "no/such/dir/r.json")]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(`cannot write --output-json ${join(dir.path, "no/such/dir/r.json")}: ENOENT`);
    expect(r.stderr).toContain("nothing was simulated");
    expect(r.stdout).not.toContain("Successful requests");
    const asDir = await runCli(["replay", "--requests", "2", "--output-json", dir.path]);
    expect(asDir.exitCode).toBe(1);
    expect(asDir.stderr).toContain("EISDIR");
  });

  test("--help lists workload, router and engine flags", async () => {
    const r = await runCli(["replay", "--help"]);
    expect(r.exitCode).toBe(0);
    for (const flag of ["--trace", "--trace-block-size", "--skip-bad-lines", "--arrival-speedup-ratio", "--concurrency", "--request-rate", "--num-workers", "--router-mode", "--block-size", "--num-gpu-blocks-override", "--num-host-blocks", "--max-num-seqs", "--max-num-batched-tokens", "--no-enable-prefix-caching", "--preemption-mode", "--seed", "--output-json"]) {
      expect(r.stdout).toContain(flag);
    }
  });
});
