// Comparisons state a verdict, and no printed latency is an artefact of the load client: two
// in-test servers of known speed compared over rounds (terminal, JSON, HTML report), `--compare`
// of two saved results with and without their per-request arrays, tokens the client read at once
// and a client too slow to time a figure (both printed as the reason, not a number).
import { describe, expect, test } from "bun:test";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/lib/logger.ts";
import { runBench } from "../../src/roles/bench/run-bench.ts";
import type { BenchOptions } from "../../src/roles/bench/bench-types.ts";
import { benchDeps, benchOptions } from "../bench-kit.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { runCli, tempDir } from "../harness.ts";

const workload = { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 2, prefixTokens: 16, suffixTokens: 4, outputTokens: 6 }, requests: 32, seed: 1 };
const options = (url: string, over: Partial<BenchOptions> = {}): BenchOptions => benchOptions(url, { model: "fake-model", workload, concurrency: 8, ...over });

describe("bench verdicts", () => {
  test("two sides over rounds: the verdict first in the terminal, at the top of the report and in the JSON", async () => {
    // The slow side's first token comes 6× later (both far above any client lag); its gaps are the same.
    // Three rounds a side: with two, one round slowed by a loaded machine can widen the interval past 1.
    await using fast = startFakeOpenAi({ ttftMs: 100, itlMs: 4, cachedTokens: (p) => p - 4 });
    await using slow = startFakeOpenAi({ ttftMs: 600, itlMs: 4, cachedTokens: (p) => p - 4 });
    using dir = tempDir("kvcr-verdict-");
    const report = join(dir.path, "r.html");
    const json = join(dir.path, "r.json");
    const out: string[] = [];
    const { verdict, results } = await runBench(options(fast.url, { workload: { ...workload, requests: 32 }, concurrency: 8, targets: [{ label: "fast", url: fast.url }, { label: "slow", url: slow.url }], rounds: 3, report, outputJson: json }), benchDeps({ stdout: { write: (t: string) => out.push(t) } }));
    // In the order they ran: the sides alternate from round to round.
    expect(results.map((r) => [r.label, r.round])).toEqual([["fast", 1], ["slow", 1], ["slow", 2], ["fast", 2], ["fast", 3], ["slow", 3]]);
    const ttft = verdict!.entries.find((e) => e.metric === "mean_ttft_ms")!;
    expect(ttft).toMatchObject({ baseline: "fast", side: "slow", call: "higher" });
    expect(ttft.ci_low!).toBeGreaterThan(1);
    // Both sides space their tokens alike; their ITLs still differ by a percent or so (a real,
    // small difference the interval may resolve), so the call follows the interval: no clear
    // difference whenever it holds 1. The exact negative control is the --compare test's.
    const itl = verdict!.entries.find((e) => e.metric === "mean_itl_ms")!;
    expect(itl).toMatchObject({ baseline: "fast", side: "slow" });
    const holdsOne = itl.ci_low! <= 1 && 1 <= itl.ci_high!;
    expect(itl.call).toBe(holdsOne ? "no clear difference" : itl.ratio! > 1 ? "higher" : "lower");
    const text = out.join("");
    expect(text.startsWith("Verdict:\n  slow vs fast: mean TTFT ")).toBe(true);
    expect(text).toMatch(/^ {2}slow vs fast: mean TTFT [\d.]+× higher \([\d.]+–[\d.]+\)$/m);
    // The table follows the verdict, each side over its rounds.
    expect(text.indexOf("Verdict:")).toBeLessThan(text.indexOf("(each side over its 3 rounds)"));
    const doc = JSON.parse(readFileSync(json, "utf8")) as { rounds: number; verdict: Record<string, unknown>[]; verdict_notes: string[]; runs: { round: number }[] };
    expect(doc.rounds).toBe(3);
    expect(doc.runs.map((r) => r.round)).toEqual([1, 1, 2, 2, 3, 3]);
    expect(doc.verdict.find((v) => v.metric === "mean_ttft_ms")).toMatchObject({ metric: "mean_ttft_ms", baseline: "fast", side: "slow", call: "higher", ratio: expect.any(Number), ci_low: expect.any(Number), ci_high: expect.any(Number) });
    expect(doc.verdict_notes[0]).toContain("3 rounds per side");
    const html = readFileSync(report, "utf8");
    expect(html.indexOf('<section id="verdict">')).toBeGreaterThan(-1);
    expect(html.indexOf('<section id="verdict">')).toBeLessThan(html.indexOf('<dl id="run-header">'));
    expect(html).toContain("<b>higher</b>");
  }, 60_000);

  test("--compare-urls NAME=URL,…: the named servers side by side, the verdict first and in the JSON; --compare-stacks: a fresh stack per side and round, 3 rounds", async () => {
    await using fast = startFakeOpenAi({ ttftMs: 50, itlMs: 2 });
    await using slow = startFakeOpenAi({ ttftMs: 300, itlMs: 2 });
    const flags = ["--model", "fake-model", "--num-prefixes", "2", "--prefix-tokens", "16", "--suffix-tokens", "4", "--output-tokens", "4", "--requests", "32", "--concurrency", "8"];
    const text = await runCli(["bench", "--compare-urls", `mine=${fast.url},theirs=${slow.url}`, ...flags]);
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout.indexOf("Verdict:")).toBeGreaterThanOrEqual(0);
    expect(text.stdout.indexOf("Verdict:")).toBeLessThan(text.stdout.indexOf("completed / failed"));
    expect(text.stdout).toMatch(/theirs vs mine: mean TTFT [\d.]+× higher/);
    const json = await runCli(["bench", "--compare-urls", `mine=${fast.url},theirs=${slow.url}`, ...flags, "--output-json", "-"]);
    const doc = JSON.parse(json.stdout) as { runs: { label: string }[]; verdict: { baseline: string; side: string }[] };
    expect(doc.runs.map((r) => r.label)).toEqual(["mine", "theirs"]);
    expect(doc.verdict[0]).toMatchObject({ baseline: "mine", side: "theirs" });

    using dir = tempDir("kvcr-compare-stacks-");
    const stack = (name: string, mode: string) => {
      const path = join(dir.path, `${name}.yaml`);
      writeFileSync(path, `stack:\n  kv_state_agent: false\n  num_workers: 2\nmockers:\n  num_host_blocks: 0\n  speedup_ratio: 0\nfrontend:\n  router_mode: ${mode}\n`);
      return path;
    };
    const stacks = await runCli(["bench", "--compare-stacks", `kv=${stack("kv", "kv")},rr=${stack("rr", "round-robin")}`, "--num-prefixes", "2", "--prefix-tokens", "128", "--output-tokens", "2", "--requests", "8", "--concurrency", "2", "--output-json", "-"], { timeoutMs: 90_000 });
    expect(stacks.exitCode, stacks.stderr.slice(-2000)).toBe(0);
    const runs = (JSON.parse(stacks.stdout) as { rounds: number; runs: { label: string; round: number }[] });
    expect(runs.rounds).toBe(3);
    // Sides alternate from round to round: neither always starts on the machine as the other left it.
    expect(runs.runs.map((r) => `${r.label}${r.round}`)).toEqual(["kv1", "rr1", "rr2", "kv2", "kv3", "rr3"]);
    expect(stacks.stderr).toContain(`starting a fresh stack (${join(dir.path, "rr.yaml")})`);
  }, 120_000);

  test("--compare: a verdict from two --save-detailed results; without the arrays it says what is missing", async () => {
    await using fast = startFakeOpenAi({ ttftMs: 100, itlMs: 4 });
    await using slow = startFakeOpenAi({ ttftMs: 300, itlMs: 4 });
    using dir = tempDir("kvcr-compare-");
    const [a, b, plain] = ["a.json", "b.json", "plain.json"].map((f) => join(dir.path, f)) as [string, string, string];
    await runBench(options(fast.url, { outputJson: a, saveDetailed: true }), benchDeps());
    await runBench(options(slow.url, { outputJson: b, saveDetailed: true }), benchDeps());
    await runBench(options(slow.url, { outputJson: plain }), benchDeps());
    const r = await runCli(["bench", "--compare", `${a},${b}`]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^ {2}${b.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} vs .*a\\.json: mean TTFT [\\d.]+× higher`, "m"));
    expect(r.stdout).toContain("one round per side: the intervals cover request noise only");
    expect(r.stdout.indexOf("Verdict:")).toBeLessThan(r.stdout.indexOf("completed / failed"));
    // The negative control: a copy of a result against it is no clear difference on every figure.
    const copy = join(dir.path, "copy.json");
    copyFileSync(a, copy);
    const same = await runCli(["bench", "--compare", `${a},${copy}`]);
    expect(same.exitCode).toBe(0);
    // The calls, not the power note ("too small to show …", printed when an interval is wide).
    const calls = same.stdout.split("\n").filter((l) => l.startsWith(`  ${copy} vs `) && !l.includes(": too small to show")).map((l) => l.slice(`  ${copy} vs ${a}: `.length));
    expect(calls.length).toBeGreaterThanOrEqual(5);
    expect(calls.filter((c) => !/^[\w ]+: no clear difference \(1\.00×/.test(c))).toEqual([]);
    expect(calls.some((c) => c.startsWith("mean ITL: no clear difference"))).toBe(true);
    const missing = await runCli(["bench", "--compare", `${a},${plain}`]);
    expect(missing.exitCode).toBe(0);
    expect(missing.stdout).toStartWith(`No verdict: ${plain} has no per-request arrays`);
    expect(missing.stdout).toContain("--save-detailed");
    expect(missing.stdout).toContain("completed / failed");
    // --output-json: the same verdict as JSON, to a file (stdout unchanged) or, with -, on stdout alone.
    const out = join(dir.path, "verdict.json");
    const written = await runCli(["bench", "--compare", `${a},${b}`, "--output-json", out]);
    expect(written.exitCode).toBe(0);
    expect(written.stdout).toContain("Verdict:");
    const doc = JSON.parse(readFileSync(out, "utf8")) as { compare: string[]; verdict: { metric: string; side: string; baseline: string; ratio: number; call: string }[]; verdict_notes: string[] };
    expect(doc.compare).toEqual([a, b]);
    const ttft = doc.verdict.find((e) => e.metric === "mean_ttft_ms")!;
    expect({ side: ttft.side, baseline: ttft.baseline, call: ttft.call }).toEqual({ side: b, baseline: a, call: "higher" });
    expect(ttft.ratio).toBeGreaterThan(1.5);
    expect(doc.verdict_notes.join(" ")).toContain("one round per side");
    const printed = await runCli(["bench", "--compare", `${a},${plain}`, "--output-json", "-"]);
    expect(printed.exitCode).toBe(0);
    const none = JSON.parse(printed.stdout) as { verdict: null; no_verdict: string };
    expect(none.verdict).toBeNull();
    expect(none.no_verdict).toStartWith(`${plain} has no per-request arrays`);
    const unwritable = await runCli(["bench", "--compare", `${a},${b}`, "--output-json", join(dir.path, "gone", "v.json")]);
    expect(unwritable.exitCode).toBe(1);
    expect(unwritable.stderr).toContain(`cannot write --output-json ${join(dir.path, "gone", "v.json")}`);
    expect(unwritable.stderr).toContain("nothing was compared");
    expect(unwritable.stdout).toBe("");
    const page = join(dir.path, "r.html");
    const reported = await runCli(["bench", "--compare", `${a},${b}`, "--report", page]);
    expect(reported.exitCode).toBe(0);
    const html = readFileSync(page, "utf8");
    expect(html).toContain('<section id="verdict">');
    expect(html).toContain("mean TTFT");
    expect(html).toContain("completed / failed");
  }, 60_000);

  test("tokens the client read at once: ITL percentiles among them print why, not 0.00; the JSON keeps vLLM's numbers", async () => {
    // Four content events per write: three gaps in four come from one network read.
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 8, chunksPerWrite: 4 });
    const out: string[] = [];
    const { results } = await runBench(options(server.url, { workload: { ...workload, synthetic: { ...workload.synthetic, outputTokens: 16 } }, percentiles: [50, 99] }), benchDeps({ stdout: { write: (t: string) => out.push(t) } }));
    const r = results[0]!;
    expect(r.itl_same_read_share).toBeGreaterThan(0.5);
    expect(r.unresolved_figures!.median_itl_ms).toContain("same network read");
    expect(typeof r.median_itl_ms).toBe("number");
    const text = out.join("");
    expect(text).toMatch(/^Median ITL \(ms\): +unresolved: \d+ % of tokens arrived in the same network read as the one before$/m);
    expect(text).not.toMatch(/^Median ITL \(ms\): +0\.00$/m);
    // The slowest gaps are the real spacing between writes: still printed.
    expect(text).toMatch(/^P99 ITL \(ms\): +[\d.]+$/m);
    expect(text).toMatch(/^Tokens read at once \(share\): +[\d.]+ %$/m);
  }, 30_000);

  test("a client too slow to time a figure prints why instead of the figure, with its lag beside the latencies", async () => {
    await using server = startFakeOpenAi({ ttftMs: 1, itlMs: 1 });
    // Block this process's loop for 30 ms every 35 ms while the run goes on: a 1 ms TTFT cannot be timed.
    const blocker = setInterval(() => {
      const until = performance.now() + 30;
      while (performance.now() < until) {
        // busy
      }
    }, 35);
    const out: string[] = [];
    try {
      // 256 requests: the run lasts many blocker periods however fast the machine is (32 could end between two).
      const { results } = await runBench(options(server.url, { workload: { ...workload, requests: 256 } }), benchDeps({ stdout: { write: (t: string) => out.push(t) }, logger: createLogger({ level: "silent" }) }));
      const r = results[0]!;
      expect(r.unresolved_figures!.median_ttft_ms).toContain("event-loop lag");
      const text = out.join("");
      expect(text).toMatch(/^Median TTFT \(ms\): +unresolved: below the load client's own event-loop lag \(p99 [\d.]+ ms\)$/m);
      // The lag is printed just before the latencies it distorts.
      expect(text.indexOf("Event-loop lag p50 / p99 / max (ms)")).toBeLessThan(text.indexOf("Time to First Token"));
      expect(text).toMatch(/^CPU used \(share of one core\): +\d+ %$/m);
    } finally {
      clearInterval(blocker);
    }
  }, 30_000);
});
