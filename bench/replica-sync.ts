// Frontend replicas on a live stack: one frontend, against two replicas synced over NATS
// (--router-replica-sync, up's own nats-server) and two replicas that route blind to each other,
// on the shared-prefix workload of bench/lib/router-scenarios.ts at concurrency 32 (kv routing,
// 1 mocker process × 4 workers at speedup 1, direct mode). Each side and round gets a fresh stack
// (cold caches) and the same seeded requests, sent round robin over the side's frontends as
// `bench --url A,B` sends them; the verdict compares prefix reuse and mean TTFT of each side with
// one frontend (ratio, interval, call: src/core/stats/verdict.ts).
//
// Then the fault: two synced replicas under the same load, one SIGKILLed a second into the run (`up`
// restarts it); the figures are the requests that failed (those in flight on the killed one), and how long
// the survivor took to free the killed replica's requests (--router-replica-timeout 2).
// Run: bun bench/replica-sync.ts [rounds=3] [requests=160]
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { upConfigFrom } from "../src/config/up.ts";
import { createLogger } from "../src/lib/logger.ts";
import type { BenchDeps, BenchOptions, FreshStack, StartedStack } from "../src/roles/bench/bench-types.ts";
import { entryText, formatVerdict } from "../src/roles/shared/measure/verdict-text.ts";
import { runBench } from "../src/roles/bench/run-bench.ts";
import { startStack } from "../src/roles/launcher/start.ts";
import { quietBenchDeps, scriptBenchOptions } from "./lib/quiet-bench.ts";
import { machineLine } from "./lib/machine.ts";
import { SCENARIOS, stackFileOf, WORKERS } from "./lib/router-scenarios.ts";

const roundsArg = process.argv[2] ?? "3";
const rounds = Number(roundsArg.replace(/^rounds=/, ""));
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds: got ${JSON.stringify(roundsArg)}, expected a positive integer`);
const requestsArg = process.argv[3];
const CONCURRENCY = 32;
const sc = SCENARIOS.find((s) => s.name === "shared-prefix")!;
const SIDES = { "one frontend": [], "two synced": ["--frontends", "2", "--router-replica-sync"], "two unsynced": ["--frontends", "2"] } as const;
type Side = keyof typeof SIDES;

const logger = createLogger({ level: "warn" });
const file = stackFileOf(sc);
const started = performance.now();
const loadAtStart = loadavg()[0]!;
let stacks = 0;

/** A fresh stack of one side (its name comes in bench's routerMode field: every side routes kv). */
async function launch(side: string, extra: string[] = []): Promise<StartedStack & { handle: Awaited<ReturnType<typeof startStack>> }> {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-replicas-"));
  const argv = ["--config", file.path, "--router-mode", "kv", "--http-port", "0", "--agent-port", "0", "--log-level", "warn", "--discovery-dir", dir, "--namespace", `replicas-${process.pid}-${++stacks}`, ...SIDES[side as Side], ...extra];
  const handle = await startStack(upConfigFrom(argv), { logger, env: process.env });
  return {
    handle,
    url: handle.frontendUrl!,
    urls: [...handle.frontendUrls],
    control: handle.control,
    close: async () => {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const deps = (startStackFor?: (fresh: FreshStack) => Promise<StartedStack>): BenchDeps => quietBenchDeps(logger, { startStack: startStackFor });

const options = (targets: BenchOptions["targets"], n: number, r: number): BenchOptions =>
  scriptBenchOptions({ targets, workload: { ...sc.workload, requests: n }, concurrency: CONCURRENCY, rounds: r });

const lines: string[] = [];
try {
  const requests = requestsArg === undefined ? sc.requestsAt(CONCURRENCY) : Number(requestsArg.replace(/^requests=/, ""));
  const sides = Object.keys(SIDES).map((label) => ({ label, fresh: { routerMode: label } }));
  const { results, verdict } = await runBench(options(sides, requests, rounds), deps(({ routerMode }) => launch(routerMode!)));
  for (const r of results) console.error(`${r.label}${r.round ? ` round ${r.round}` : ""}: mean TTFT ${r.mean_ttft_ms.toFixed(1)} ms, reuse ${(r.prefix_cache_reuse_ratio ?? NaN).toFixed(3)}, failed ${r.failed}, ${r.duration.toFixed(1)} s`);
  lines.push(`shared-prefix at concurrency ${CONCURRENCY}: ${sc.describe}; ${WORKERS} workers, speedup 1, kv routing, ${rounds} round(s) per side, fresh stack per side and round`);
  lines.push("| side | mean TTFT (ms) | prefix reuse | failed |", "|---|---|---|---|");
  for (const label of Object.keys(SIDES)) {
    const rs = results.filter((r) => r.label === label);
    const mean = (f: (x: (typeof rs)[number]) => number) => rs.reduce((a, x) => a + f(x), 0) / rs.length;
    lines.push(`| ${label} | ${mean((x) => x.mean_ttft_ms).toFixed(1)} | ${mean((x) => x.prefix_cache_reuse_ratio ?? NaN).toFixed(3)} | ${rs.reduce((a, x) => a + x.failed, 0)} |`);
  }
  if (verdict) {
    lines.push("", "Verdict (each side against one frontend):");
    for (const e of verdict.entries.filter((x) => x.metric === "mean_ttft_ms" || x.metric === "prefix_cache_reuse_ratio")) lines.push(`- ${e.side}: ${entryText(e)}`);
    console.error(formatVerdict(verdict));
  }

  // The fault: one of two synced replicas SIGKILLed a second after the survivor counts its requests.
  const stack = await launch("two synced", ["--router-replica-timeout", "2"]);
  try {
    const survivor = stack.urls![1]!;
    const remote = async () => ((await (await fetch(`${survivor}/health`)).json()) as { replica_sync: { remote_requests: number } }).replica_sync.remote_requests;
    let killedAt = NaN;
    let freedAfterMs = NaN;
    const watch = (async () => {
      // Kill once the survivor counts the other's requests (the load is under way).
      while ((await remote()) === 0) await Bun.sleep(20);
      await Bun.sleep(1000);
      await stack.control!.kill({ role: "frontend" }, undefined);
      killedAt = performance.now();
      // Its requests freed by the survivor: nothing of the killed replica counted any more (its restart is a new replica).
      const peers = async () => ((await (await fetch(`${survivor}/metrics`)).text()).match(/kvcr_frontend_router_replica_sync_replicas_expired_total (\d+)/)?.[1] ?? "0") !== "0";
      while (!(await peers())) await Bun.sleep(20);
      freedAfterMs = performance.now() - killedAt;
    })();
    const { results: fault } = await runBench(options([{ url: stack.url, urls: stack.urls }], requests, 1), deps());
    await watch;
    const f = fault[0]!;
    const metrics = await (await fetch(`${survivor}/metrics`)).text();
    const expired = metrics.match(/kvcr_frontend_router_replica_sync_expired_requests_total (\d+)/)?.[1];
    // The survivor's sync lag over the run: batch arrival minus its sender's send time.
    const figure = (re: RegExp) => Number(metrics.match(re)?.[1] ?? NaN);
    const lagCount = figure(/kvcr_frontend_router_replica_sync_lag_seconds_count (\S+)/);
    const lagMeanMs = (figure(/kvcr_frontend_router_replica_sync_lag_seconds_sum (\S+)/) / lagCount) * 1000;
    const within = (le: string) => figure(new RegExp(`kvcr_frontend_router_replica_sync_lag_seconds_bucket\\{le="${le}"\\} (\\S+)`)) / lagCount;
    lines.push(
      "",
      `One of two synced replicas SIGKILLed mid-run (--router-replica-timeout 2, up restarts it): ${f.completed} of ${requests} requests completed, ${f.failed} failed (${JSON.stringify(f.error_breakdown ?? {})}); the survivor freed the killed replica's ${expired ?? "?"} request(s) ${(freedAfterMs / 1000).toFixed(1)} s after the kill; warnings: ${f.warnings.filter((w) => w.includes("refused")).join("; ") || "none"}`,
      `Sync lag at the survivor over that run: ${lagCount} batches, mean ${lagMeanMs.toFixed(2)} ms, ${(within("0.002") * 100).toFixed(0)} % within 2 ms, ${(within("0.01") * 100).toFixed(0)} % within 10 ms`,
    );
  } finally {
    await stack.close();
  }
} finally {
  file.remove();
}
lines.push("", machineLine(`load average ${loadAtStart.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end; wall time ${((performance.now() - started) / 60_000).toFixed(1)} min`));
console.log(lines.join("\n"));
