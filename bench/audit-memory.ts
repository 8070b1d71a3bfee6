// `up --audit` memory over time (docs/PERFORMANCE.md, Reliability): a stack with the audit on
// (1 s interval) under a steady 20 req/s for BENCH_MINUTES (default 10); the up process's RSS every
// 10 s, then its first, last, lowest and highest value and the drift from the first minute's mean
// to the last minute's. Run: `npx bun bench/audit-memory.ts` (env BENCH_MINUTES, BENCH_RATE, BENCH_BIN).
import { startStack, rssMiB } from "./lib/chaos-stack.ts";
import { driveLoad } from "./lib/chaos-watch.ts";
import { machineLine } from "./lib/machine.ts";
import { envNumber } from "./lib/measure.ts";

const MINUTES = envNumber("BENCH_MINUTES", 10);
const RATE = envNumber("BENCH_RATE", 20);
const EVERY_S = 10;

const stack = await startStack(["--mocker-processes", "1", "--workers-per-process", "2", "--audit", "--audit-interval", "1"]);
try {
  const load = driveLoad(stack.frontendUrl, RATE);
  const series: { t_s: number; mib: number }[] = [];
  const t0 = performance.now();
  while (performance.now() - t0 < MINUTES * 60_000) {
    series.push({ t_s: (performance.now() - t0) / 1000, mib: rssMiB(stack.upPid) });
    console.error(`  ${series.at(-1)!.t_s.toFixed(0)} s: up RSS ${series.at(-1)!.mib.toFixed(1)} MiB`);
    await Bun.sleep(EVERY_S * 1000);
  }
  const l = await load.stop();
  const mibs = series.map((s) => s.mib);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const firstMinute = mean(series.filter((s) => s.t_s < 60).map((s) => s.mib));
  const lastMinute = mean(series.filter((s) => s.t_s >= MINUTES * 60 - 60).map((s) => s.mib));
  const audits = stack.log.filter((line) => / audit [\d.]+ s: worst precision/.test(line)).length;
  console.log(`up --audit (1 s) under ${RATE} req/s for ${MINUTES} min: ${l.failed}/${l.sent} requests failed, ${audits} audit points`);
  console.log(`  up RSS MiB: first ${mibs[0]!.toFixed(1)}, last ${mibs.at(-1)!.toFixed(1)}, min ${Math.min(...mibs).toFixed(1)}, max ${Math.max(...mibs).toFixed(1)}; last minute's mean − first minute's: ${(lastMinute - firstMinute).toFixed(1)} MiB`);
  console.log(machineLine());
} finally {
  await stack.stop();
}
