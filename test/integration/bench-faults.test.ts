// `bench --faults` and the audit against a real state-agent stack (the launcher's own children):
// a fault-free run's index matches the truth exactly; a silent loss (drop_batches with renumber,
// a quarter of worker 0's batches) lowers recall until a clear_all makes index and truth agree again, and
// bench's recovery time agrees, within one audit interval, with what this test measures polling
// both endpoints itself; the HTML report shades the fault windows and draws index accuracy and
// regret; a visible loss (drop_batches keeping the seq) shows as gaps the state agent counts and
// repairs, none without a fault. Against another router (a fake one without GET /v1/index),
// --mocker-urls still reaches the mockers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadSchedule } from "../../src/config/fault-schedule.ts";
import { upConfigFrom } from "../../src/config/up.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { CHART_COUNT } from "../../src/roles/bench/html-report.ts";
import { runBench } from "../../src/roles/bench/run-bench.ts";
import type { BenchOptions, ObservedResult } from "../../src/roles/bench/bench-types.ts";
import { accuracyOf, compareCounts } from "../../src/core/audit/index-audit.ts";
import { startStack, type StackHandle } from "../../src/roles/launcher/start.ts";
import { readResidency } from "../../src/roles/shared/stack/stack-truth.ts";
import { benchDeps, benchOptions } from "../bench-kit.ts";
import { CHROMIUM, openPage } from "../chromium.ts";
import { freshStackStarter } from "../../src/cli/bench-stack.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { tempDir } from "../harness.ts";

const logger = createLogger({ level: "silent" });
const INTERVAL_S = 0.25;
let stack: StackHandle;
let dir: ReturnType<typeof tempDir>;
let mockers: string[];

beforeAll(async () => {
  dir = tempDir("kvcr-bench-faults-");
  const config = upConfigFrom(["--http-port", "0", "--agent-port", "0", "--discovery-dir", join(dir.path, "discovery"), "--namespace", "bench-faults", "--num-gpu-blocks-override", "2048", "--log-level", "warn"]);
  stack = await startStack(config, { logger, write: () => {} });
  mockers = stack.processes.filter((p) => p.role === "mocker").map((p) => p.url);
}, 60_000);

afterAll(async () => {
  await stack?.close();
  dir?.[Symbol.dispose]();
});

function options(over: Partial<BenchOptions>): BenchOptions {
  return benchOptions(stack.frontendUrl!, {
    workload: { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 6, prefixTokens: 256, suffixTokens: 64, outputTokens: 4 }, seed: 11, requests: 100_000 },
    requestRate: 30,
    auditIntervalS: INTERVAL_S,
    blockSize: 64,
    ...over,
  });
}

const deps = benchDeps({ logger });

/** What the state agent (the KV-event consumer) counted per worker, summed over its ranks: live-stream gaps, and the repairs (replayed batches, state dumps). */
async function agentCounts(): Promise<Map<string, { gaps: number; repairs: number }>> {
  const slots = (await (await fetch(`${stack.agentUrl}/v1/slots`)).json()) as { worker_id: string; raw_gaps: number; raw_batches_recovered: number; state_dumps_applied: number }[];
  const out = new Map<string, { gaps: number; repairs: number }>();
  for (const s of slots) {
    const c = out.get(s.worker_id) ?? { gaps: 0, repairs: 0 };
    out.set(s.worker_id, { gaps: c.gaps + s.raw_gaps, repairs: c.repairs + s.raw_batches_recovered + s.state_dumps_applied });
  }
  return out;
}

/** The counts' growth from `before` to `after`, per worker. */
function growth(before: Map<string, { gaps: number; repairs: number }>, after: Map<string, { gaps: number; repairs: number }>): Record<string, { gaps: number; repairs: number }> {
  return Object.fromEntries([...after].map(([w, a]) => [w, { gaps: a.gaps - (before.get(w)?.gaps ?? 0), repairs: a.repairs - (before.get(w)?.repairs ?? 0) }]));
}

function schedule(lines: string[]) {
  const path = join(dir.path, `s-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, lines.join("\n"));
  return loadSchedule(path, deps.readFile);
}

describe("bench audit and fault schedules", () => {
  test("a fault-free run: index and truth agree at every sample (precision = recall = 1), regret computed, no gap seen", async () => {
    const before = await agentCounts();
    const { results } = await runBench(options({ durationS: 1.5 }), deps);
    // The control for the visible loss below: without a fault the agent sees no gap on either worker.
    expect(growth(before, await agentCounts())).toEqual({ "kvcr-slot-0": { gaps: 0, repairs: 0 }, "kvcr-slot-1": { gaps: 0, repairs: 0 } });
    const r = results[0]!;
    expect(r.completed).toBeGreaterThan(20);
    expect(r.faults).toBeUndefined();
    expect(r.audit!.index_available).toBe(true);
    expect(r.audit!.points.length).toBeGreaterThanOrEqual(5);
    for (const p of r.audit!.points) expect([p.t_s, p.precision, p.recall]).toEqual([p.t_s, 1, 1]);
    expect(Object.keys(r.audit!.worst).sort()).toEqual(["kvcr-slot-0", "kvcr-slot-1"]);
    expect(r.regret!.requests).toBeGreaterThan(20);
    // Load regret too: the truth samples carry each rank's requests waiting or running.
    expect(r.regret!.load?.requests).toBeGreaterThan(20);
  }, 30_000);

  test("a silent loss lowers accuracy until clear_all; recovery_s matches this test's own polling; the report shows it", async () => {
    // This test's own view: index, truth, index again, every 50 ms, stamped with wall time.
    const own: { wallMs: number; precision: number; recall: number }[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const before = await readResidency(`${stack.frontendUrl}/v1/index`);
        const wallMs = Date.now();
        const truth = { sources: (await Promise.all(mockers.map((m) => readResidency(`${m}/v1/residency`)))).flatMap((d) => d.sources) };
        await Bun.sleep(50);
        const after = await readResidency(`${stack.frontendUrl}/v1/index`);
        const acc = [...compareCounts(truth, before, after).values()].map(accuracyOf);
        own.push({ wallMs, precision: Math.min(...acc.map((a) => a.precision)), recall: Math.min(...acc.map((a) => a.recall)) });
      }
    })();
    const report = join(dir.path, "faults.html");
    let r: ObservedResult;
    try {
      const entries = schedule([
        "- {at: 0.5s, target: worker 0, fault: {kind: drop_batches, share: 0.25, renumber: true, for: 2.5}}",
        "- {at: 4s, target: worker 0, fault: {kind: clear_all}}",
      ]);
      r = (await runBench(options({ durationS: 6, schedule: entries, report }), deps)).results[0]!;
    } finally {
      polling = false;
      await poller;
    }
    expect(r.faults!.map((f) => [f.entry, f.kind, f.worker_id, f.error])).toEqual([
      [1, "drop_batches", "kvcr-slot-0", undefined],
      [2, "clear_all", "kvcr-slot-0", undefined],
    ]);
    const [drop, clear] = r.faults!;
    expect(drop!.ends_at_s).toBeCloseTo(drop!.applied_s + 2.5, 3);
    expect(Number.isNaN(Date.parse(drop!.applied_at))).toBe(false);
    // Lost store batches leave the index short of worker 0's blocks: recall falls during the loss.
    const during = r.audit!.points.filter((p) => p.t_s > drop!.applied_s && p.t_s < clear!.applied_s);
    expect(Math.min(...during.map((p) => Math.min(p.precision, p.recall)))).toBeLessThan(0.99);
    expect(r.audit!.worst["kvcr-slot-0"]!.recall).toBeLessThan(0.99);
    // After the clear, index and truth agree again.
    const last = r.audit!.points.at(-1)!;
    expect([last.precision, last.recall]).toEqual([1, 1]);
    const rec = r.recovery_s!.find((x) => x.entry === 1)!;
    expect(rec.from_s).toBe(drop!.ends_at_s!);
    expect(rec.recovery_s).not.toBeNull();

    // The same recovery measured by this test: wall time of the drop's end → first own sample with both ≥ 0.99.
    const endWallMs = Date.parse(drop!.applied_at) + (drop!.ends_at_s! - drop!.applied_s) * 1000;
    const back = own.find((s) => s.wallMs >= endWallMs && s.precision >= 0.99 && s.recall >= 0.99);
    expect(back).toBeDefined();
    const ownRecoveryS = (back!.wallMs - endWallMs) / 1000;
    // Bench samples every INTERVAL_S; this poller every ~0.1 s (reads + 50 ms settle).
    expect(Math.abs(rec.recovery_s! - ownRecoveryS)).toBeLessThanOrEqual(INTERVAL_S + 0.1);

    // The report: fault windows on the time charts, the accuracy chart and the regret histogram.
    const html = readFileSync(report, "utf8");
    expect(html).toContain("Index accuracy");
    if (!CHROMIUM && !process.env.CI) return;
    await using page = await openPage(`file://${report}`);
    expect(await page.evaluate<number>("document.querySelectorAll('#charts .uplot').length")).toBe(CHART_COUNT + 2);
    expect(await page.evaluate<string | null>("document.querySelector('#chart-throughput').getAttribute('data-fault-windows')")).toBe("2");
    expect(await page.evaluate<string | null>("document.querySelector('#chart-accuracy').getAttribute('data-fault-windows')")).toBe("2");
    expect(await page.evaluate<number>("[...document.querySelectorAll('#chart-accuracy canvas, #chart-regret canvas')].filter(c => c.width > 100).length")).toBe(2);
    expect(await page.evaluate<string>("document.querySelector('#faults').textContent")).toMatch(/drop_batches on worker 0.*clear_all on worker 0/);
    expect(page.errors).toEqual([]);
  }, 60_000);

  test("a visible loss (drop_batches keeping the seq, half the batches for 1.5 s): the agent sees the gaps and rebuilds, and the index recovers on its own", async () => {
    const entries = schedule(["- {at: 0.3s, target: worker 0, fault: {kind: drop_batches, share: 0.5, for: 1.5}}"]);
    const before = await agentCounts();
    const r = (await runBench(options({ durationS: 4, schedule: entries }), deps)).results[0]!;
    expect(r.faults!.map((f) => [f.kind, f.error])).toEqual([["drop_batches", undefined]]);
    // The agent saw the dropped batches as gaps in worker 0's stream and repaired them; worker 1, unfaulted, had none.
    const seen = growth(before, await agentCounts());
    expect(seen["kvcr-slot-0"]!.gaps).toBeGreaterThan(0);
    expect(seen["kvcr-slot-0"]!.repairs).toBeGreaterThan(0);
    expect(seen["kvcr-slot-1"]).toEqual({ gaps: 0, repairs: 0 });
    // Without a clear_all: the gaps are repaired (state dump), so the run ends accurate and the recovery is measured.
    const last = r.audit!.points.at(-1)!;
    expect([last.precision, last.recall]).toEqual([1, 1]);
    expect(r.recovery_s![0]!.recovery_s).not.toBeNull();
  }, 60_000);

  test("another router (no GET /v1/index): faults and truth still reach the mockers given by --mocker-urls", async () => {
    await using fake = startFakeOpenAi({ ttftMs: 2, itlMs: 1, worker: (n) => `w${n % 2}` });
    const entries = schedule(["- {at: 0.2s, target: worker 1 rank 0, fault: {kind: latency, ttft_ms: 1, for: 30}}"]);
    const { results } = await runBench(options({ targets: [{ url: fake.url }], mockerUrls: mockers, durationS: 1, schedule: entries }), deps);
    const r = results[0]!;
    expect(r.faults!.map((f) => [f.kind, f.worker_id, f.mocker, f.error])).toEqual([["latency", "kvcr-slot-1", mockers[0], undefined]]);
    expect(r.audit!.index_available).toBe(false);
    expect(r.audit!.points).toEqual([]);
    expect(r.recovery_s).toEqual([{ entry: 1, target: "worker 1 rank 0", kind: "latency", from_s: r.faults![0]!.ends_at_s!, recovery_s: null }]);
    // Bench withdrew the fault it posted when the run ended.
    expect(((await (await fetch(`${mockers[0]}/admin/faults`)).json()) as { faults: unknown[] }).faults).toEqual([]);
  }, 30_000);

  test("a fresh stack bench starts itself: kill reaches the mocker of worker 1 (both workers of the process) through the launcher", async () => {
    const entries = schedule(["- {at: 0.3s, target: worker 1, fault: kill}"]);
    const startFresh = freshStackStarter(undefined, logger, {}, "warn");
    const { results } = await runBench(options({ targets: [{ fresh: { routerMode: "kv" } }], durationS: 1.5, schedule: entries }), { ...deps, startStack: startFresh });
    const r = results[0]!;
    expect(r.faults!.map((f) => [f.kind, f.worker_id, f.error])).toEqual([["kill", "kvcr-slot-1", undefined]]);
    expect(r.faults![0]!.ends_at_s).toBe(r.faults![0]!.applied_s);
    expect(r.audit!.points.length).toBeGreaterThan(0);
  }, 60_000);
});
