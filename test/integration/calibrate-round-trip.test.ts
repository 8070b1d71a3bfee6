// calibrate's round trip: a live worker times its steps from a profile the test hides (not a
// built-in: Qwen3-32B's on H200 with decode × 1.3 and prefill × 0.8); one bench run against its
// vLLM OpenAI server, saved with its per-request arrays, is calibrated; the fitted profile's held-out MAPE is printed at most 5 %, and
// on another seeded workload the fitted and the hidden profile replay within 5 % of each other in
// mean TTFT and mean ITL.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadTimingProfile } from "../../src/config/timing-profile.ts";
import { createRng } from "../../src/core/random/rng.ts";
import type { TablesProfile } from "../../src/protocol/timing-profile.ts";
import { CLI_ENTRY, runCli, spawnProcess, tempDir } from "../harness.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A built-in's tables scaled: the profile no build ships, so nothing can be looked up. */
function hiddenProfile(): TablesProfile {
  const base = loadTimingProfile("builtin:qwen3-32b-h200-vllm0.24-tp2") as TablesProfile;
  const scaled = (ms: number[][], f: number) => ms.map((row) => row.map((v) => v * f));
  const { kv: _kv, ...rest } = base;
  return { ...rest, name: "hidden", prefill: { ...base.prefill, ms: scaled(base.prefill.ms, 0.8) }, decode: { ...base.decode, ms: scaled(base.decode.ms, 1.3) } as TablesProfile["decode"] };
}

/** A Mooncake trace of unique prompts, seeded: Poisson arrivals, prompts and outputs drawn uniformly. */
function otherWorkload(seed: number, n: number): string {
  const rng = createRng(seed);
  const rows: string[] = [];
  let t = 0;
  let id = 0;
  for (let i = 0; i < n; i++) {
    t += (-Math.log(1 - rng.next()) / 3) * 1000;
    const input = 2000 + Math.floor(rng.next() * 4000);
    const blocks = Math.ceil(input / 512);
    rows.push(JSON.stringify({ timestamp: Math.round(t), input_length: input, output_length: 25 + Math.floor(rng.next() * 50), hash_ids: Array.from({ length: blocks }, () => id++) }));
  }
  return rows.join("\n") + "\n";
}

describe("calibrate round trip", () => {
  test("a live run on a hidden profile, calibrated: held-out MAPE ≤ 5 %, and the fit replays another workload within 5 % of the hidden profile", async () => {
    using dir = tempDir("kvcr-calibrate-");
    const hidden = join(dir.path, "hidden.json");
    writeFileSync(hidden, JSON.stringify(hiddenProfile()));
    // The run is against a worker's own vLLM OpenAI server, as a user benches one vLLM server.
    const stateFile = join(dir.path, "state.json");
    const up = spawnProcess([process.execPath, CLI_ENTRY, "up", "--roles", "mockers", "--no-kv-state-agent", "--worker-api", "--num-workers", "1", "--block-size", "16", "--timing-profile", hidden, "--discovery-dir", join(dir.path, "discovery"), "--state-file", stateFile]);
    cleanups.push(async () => {
      up.proc.kill("SIGTERM");
      await Promise.race([up.proc.exited, Bun.sleep(10_000)]);
      await up[Symbol.asyncDispose]();
    });
    await up.readLine((l) => l.startsWith("kvcr-mock stack ready"), 30_000);
    const url = (JSON.parse(readFileSync(stateFile, "utf8")) as { processes: { worker_api_urls?: string[] }[] }).processes.flatMap((p) => p.worker_api_urls ?? [])[0]!;
    // Long prompts: a request's first token waits for its own prefill (over 100 ms), so the client's
    // and the server's own few milliseconds stay small beside it.
    const bench = await runCli(
      ["bench", "--url", url, "--dataset-name", "random", "--random-input-len", "4000", "--random-range-ratio", "0.5", "--random-output-len", "50", "--num-prompts", "140", "--request-rate", "3", "--seed", "3", "--save-result", "--save-detailed", "--result-dir", dir.path, "--result-filename", "run.json"],
      { timeoutMs: 120_000 },
    );
    expect(bench.exitCode, bench.stderr.slice(-2000)).toBe(0);

    const fitted = join(dir.path, "fitted.json");
    const reportPath = join(dir.path, "report.json");
    // The run keeps each request's worker and the server's counters around it; its block size comes from there.
    const run = JSON.parse(readFileSync(join(dir.path, "run.json"), "utf8")) as { workers: string[]; server_metrics: { before: { totals: Record<string, number> }; after: { totals: Record<string, number>; cache_config: Record<string, string> } } };
    expect(new Set(run.workers).size).toBe(1);
    expect(run.server_metrics.after.cache_config.block_size).toBe("16");
    expect(run.server_metrics.after.totals["vllm:time_to_first_token_seconds_count"]! - run.server_metrics.before.totals["vllm:time_to_first_token_seconds_count"]!).toBe(140);
    const cal = await runCli(["calibrate", "--from", join(dir.path, "run.json"), "--out", fitted, "--output-json", reportPath]);
    expect(cal.exitCode, cal.stderr.slice(-2000)).toBe(0);
    expect(cal.stderr).toContain("block size 16 and 16384 G1 blocks from the server's vllm:cache_config_info in the run");
    expect(cal.stdout).toMatch(/^MAPE per request +[\d.]+ % +[\d.]+ % +[\d.]+ %$/m);
    const report = JSON.parse(readFileSync(reportPath, "utf8")) as { held_out: number; server_mean_ttft_ms: number; held_out_accuracy: Record<"ttft" | "itl" | "e2e", { mapePct: number; pearsonR: number }> };
    expect(report.held_out).toBeGreaterThan(20);
    expect(report.server_mean_ttft_ms).toBeGreaterThan(100);
    for (const m of ["ttft", "itl", "e2e"] as const) {
      expect(report.held_out_accuracy[m].mapePct, m).toBeLessThanOrEqual(5);
      expect(report.held_out_accuracy[m].pearsonR, m).toBeGreaterThan(0.9);
    }
    const profile = JSON.parse(readFileSync(fitted, "utf8")) as { form: string; parametric: Record<string, number>; observed: { decodeBatch: number } };
    expect(profile.form).toBe("parametric");
    expect(profile.observed.decodeBatch).toBeGreaterThan(1);

    const trace = join(dir.path, "other.jsonl");
    writeFileSync(trace, otherWorkload(5, 200));
    const replay = async (p: string) => {
      const r = await runCli(["replay", "--trace", trace, "--block-size", "16", "--timing-profile", p, "--output-json", "-"]);
      expect(r.exitCode, r.stderr.slice(-2000)).toBe(0);
      return JSON.parse(r.stdout) as { completed: number; mean_ttft_ms: number; mean_itl_ms: number };
    };
    const [truth, fit] = [await replay(hidden), await replay(fitted)];
    expect(fit.completed).toBe(200);
    expect(Math.abs(fit.mean_ttft_ms / truth.mean_ttft_ms - 1)).toBeLessThanOrEqual(0.05);
    expect(Math.abs(fit.mean_itl_ms / truth.mean_itl_ms - 1)).toBeLessThanOrEqual(0.05);
  }, 180_000);
});
