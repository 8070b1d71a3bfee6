// `kvcr-mock calibrate` at the command line: a run saved as vLLM writes it (seconds, start_times)
// is fitted, reported and written as a profile that replay then takes; aiperf's records are read
// alike; what cannot be fitted is refused naming the file and what is missing, before any output.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { simulatedTimes } from "../../src/core/calibrate/fit.ts";
import { observedWorkload, type ObservedRequest } from "../../src/core/calibrate/observed-workload.ts";
import { createRng } from "../../src/core/random/rng.ts";
import { simulate } from "../../src/core/replay/simulator.ts";
import { hasher } from "../engine-kit.ts";
import { runCli, tempDir } from "../harness.ts";
import { sampleParametric } from "../timing-profile-kit.ts";

/** A run of a server whose steps cost the sample parametric model, in vllm bench serve's --save-detailed keys. */
function vllmRun(n: number): Record<string, unknown> {
  const rng = createRng(4);
  let t = 0;
  const reqs: ObservedRequest[] = Array.from({ length: n }, () => {
    t += (-Math.log(1 - rng.next()) / 8) * 1000;
    return { sendMs: t, promptTokens: 1000 + Math.floor(rng.next() * 2000), outputTokens: 5 + Math.floor(rng.next() * 20), cachedTokens: NaN, ttftMs: 0, e2eMs: 0 };
  });
  const { workload } = observedWorkload(reqs, 16);
  const sim = simulate(workload, { engine: { blockSize: 16, timingModel: "profile", timingProfile: sampleParametric(2) }, numWorkers: 1, routerMode: "round-robin", arrival: { kind: "trace", speedupRatio: 1 }, seed: 0 }, { hasher });
  const gaps = (i: number) => {
    const s = simulatedTimes(sim, i);
    return Array.from({ length: reqs[i]!.outputTokens - 1 }, () => s.itlMs / 1000);
  };
  return {
    backend: "openai",
    model_id: "org/Model",
    request_rate: 8,
    input_lens: reqs.map((r) => r.promptTokens),
    output_lens: reqs.map((r) => r.outputTokens),
    ttfts: reqs.map((_, i) => simulatedTimes(sim, i).ttftMs / 1000),
    itls: reqs.map((_, i) => gaps(i)),
    start_times: reqs.map((r) => 100 + r.sendMs / 1000),
    errors: reqs.map(() => ""),
  };
}

describe("kvcr-mock calibrate", () => {
  test("a vLLM run: the report, a parametric profile that replay takes, and the report as JSON", async () => {
    using dir = tempDir("kvcr-calibrate-cli-");
    const from = join(dir.path, "vllm-run.json");
    writeFileSync(from, JSON.stringify(vllmRun(120)));
    const out = join(dir.path, "mine.json");
    const r = await runCli(["calibrate", "--from", from, "--out", out, "--block-size", "16", "--output-json", join(dir.path, "report.json")]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Fitted on \d+ requests in \d+ replays \([\d.]+ s\); judged on the \d+ held out \(--holdout 0\.3\)\.$/m);
    for (const row of ["per step that decodes", "per new prompt token", "per request, before scheduling", "error of p99", "MPE per request", "Pearson r"]) expect(r.stdout).toContain(row);
    expect(r.stderr).toContain("no cached prompt lengths (cached_lens): no prefix reuse is assumed");
    const profile = JSON.parse(readFileSync(out, "utf8")) as { schema: string; name: string; form: string; provenance: { model: string; framework: string }; parametric: Record<string, number>; fit: { held_out: number } };
    expect(profile).toMatchObject({ schema: "kvcr-mock/timing-profile/1", name: "vllm-run", form: "parametric", provenance: { model: "org/Model", framework: "openai" } });
    expect(Object.keys(profile.parametric)).toEqual(["stepMs", "prefillStepMs", "decodeStepMs", "prefillTokenMs", "prefillAttentionMs", "decodeRequestMs", "decodeContextMs", "requestMs"]);
    const report = JSON.parse(readFileSync(join(dir.path, "report.json"), "utf8")) as { held_out: number; held_out_accuracy: { ttft: { mapePct: number } } };
    expect(report.held_out).toBe(profile.fit.held_out);
    expect(report.held_out_accuracy.ttft.mapePct).toBeLessThan(10);
    const replay = await runCli(["replay", "--requests", "20", "--timing-profile", out, "--output-json", "-"]);
    expect(replay.exitCode, replay.stderr).toBe(0);
    expect((JSON.parse(replay.stdout) as { completed: number }).completed).toBe(20);
    // A stack too small for the run's prompts: the replay's failures are said, with the flags to give.
    const small = await runCli(["calibrate", "--from", from, "--out", join(dir.path, "small.json"), "--block-size", "16", "--num-gpu-blocks-override", "40"]);
    expect(small.stderr).toMatch(/\d+ of the run's requests failed in the replay \(request \d+: prompt \(\d+\) \+ max tokens \(\d+\) need \d+ KV blocks, more than the 40 this rank has\); give the server's --num-gpu-blocks-override/);
    // --out - prints the profile instead of the report.
    const printed = await runCli(["calibrate", "--from", from, "--out", "-", "--block-size", "16", "--name", "printed"]);
    expect((JSON.parse(printed.stdout) as { name: string }).name).toBe("printed");
  }, 60_000);

  test("aiperf's records (its artifact directory) are read as a run, their send times as start_times", async () => {
    using dir = tempDir("kvcr-calibrate-aiperf-");
    const run = vllmRun(60);
    const lines = (run.ttfts as number[]).map((ttft, i) => {
      const start = Math.round(((run.start_times as number[])[i]! - 100) * 1e9) + 1_700_000_000_000_000_000;
      const gaps = (run.itls as number[][])[i]!;
      return JSON.stringify({
        metadata: { benchmark_phase: "profiling", request_start_ns: start, request_end_ns: start + Math.round((ttft + gaps.reduce((a, b) => a + b, 0)) * 1e9) },
        metrics: {
          time_to_first_token: { value: ttft * 1000, unit: "ms" },
          inter_chunk_latency: { value: gaps.map((g) => g * 1000), unit: "ms" },
          request_latency: { value: (ttft + gaps.reduce((a, b) => a + b, 0)) * 1000, unit: "ms" },
          input_sequence_length: { value: (run.input_lens as number[])[i], unit: "tokens" },
          output_sequence_length: { value: (run.output_lens as number[])[i], unit: "tokens" },
        },
      });
    });
    const artifacts = join(dir.path, "artifacts");
    mkdirSync(artifacts);
    writeFileSync(join(artifacts, "profile_export.jsonl"), lines.join("\n") + "\n");
    const r = await runCli(["calibrate", "--from", artifacts, "--out", join(dir.path, "p.json"), "--block-size", "16"]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toContain("no start_times");
    expect(existsSync(join(dir.path, "p.json"))).toBe(true);
  }, 60_000);

  test("refused with the reason: no per-request times, too few requests, no arrivals, missing flags, an unwritable --out", async () => {
    using dir = tempDir("kvcr-calibrate-bad-");
    const summary = join(dir.path, "summary.json");
    writeFileSync(summary, JSON.stringify({ completed: 100, mean_ttft_ms: 50 }));
    const out = join(dir.path, "p.json");
    const none = await runCli(["calibrate", "--from", summary, "--out", out]);
    expect(none.exitCode).toBe(1);
    expect(none.stderr).toContain(`--from ${summary}: has no per-request times (missing input_lens, output_lens, ttfts, itls); calibrate needs the arrays input_lens, output_lens, ttfts, itls`);
    expect(none.stderr).toContain("--save-detailed");
    const few = join(dir.path, "few.json");
    writeFileSync(few, JSON.stringify(vllmRun(5)));
    expect((await runCli(["calibrate", "--from", few, "--out", out])).stderr).toContain("5 completed request(s); calibrate needs at least 20");
    const untimed = join(dir.path, "untimed.json");
    const { start_times: _s, request_rate: _r, ...rest } = vllmRun(30);
    writeFileSync(untimed, JSON.stringify(rest));
    expect((await runCli(["calibrate", "--from", untimed, "--out", out])).stderr).toContain("the run has no start_times, request_rate or max_concurrency; give --request-rate R or --concurrency N");
    const flags = await runCli(["calibrate"]);
    expect(flags.exitCode).toBe(2);
    expect(flags.stderr).toContain("--from: give the measured run to fit");
    expect(flags.stderr).toContain("--out: give the file to write the fitted profile to");
    const missing = await runCli(["calibrate", "--from", join(dir.path, "nope.json"), "--out", out]);
    expect(missing.stderr).toContain(`--from: cannot read ${join(dir.path, "nope.json")}`);
    const blocked = await runCli(["calibrate", "--from", few, "--out", join(summary, "p.json")]);
    expect(blocked.stderr).toContain(`cannot write --out ${join(summary, "p.json")}`);
    expect(existsSync(out)).toBe(false);
  }, 60_000);
});
