// `up --audit` memory over time (docs/PERFORMANCE.md, Reliability): two stacks side by side under
// the same steady 20 req/s for BENCH_MINUTES (default 10), one with the audit on (1 s interval) and
// one without, each mocker's caches small enough to fill in the first minute; each up process's RSS every 10 s, then its first, lowest and highest value and the
// drift from the first minute's mean to the last minute's. Run: `npx bun bench/audit-memory.ts`
// (env BENCH_MINUTES, BENCH_RATE, BENCH_BIN).
import { startStack, rssMiB, type ChaosStack } from "./lib/chaos-stack.ts";
import { driveLoad } from "./lib/chaos-watch.ts";
import { machineLine } from "./lib/machine.ts";
import { envNumber } from "./lib/measure.ts";

const MINUTES = envNumber("BENCH_MINUTES", 10);
const RATE = envNumber("BENCH_RATE", 20);
const EVERY_S = 10;
// Caches that fill within the first minute: what the audit reads (every resident block, twice) then
// stays the same size, so any growth left is time's, not the caches'.
const SHAPE = ["--mocker-processes", "1", "--workers-per-process", "2", "--num-gpu-blocks-override", "512", "--num-host-blocks", "512"];

async function watch(label: string, stack: ChaosStack): Promise<string> {
  const load = driveLoad(stack.frontendUrl, RATE);
  const series: { t_s: number; mib: number }[] = [];
  const t0 = performance.now();
  while (performance.now() - t0 < MINUTES * 60_000) {
    series.push({ t_s: (performance.now() - t0) / 1000, mib: rssMiB(stack.upPid) });
    console.error(`  ${label} ${series.at(-1)!.t_s.toFixed(0)} s: up RSS ${series.at(-1)!.mib.toFixed(1)} MiB`);
    await Bun.sleep(EVERY_S * 1000);
  }
  const l = await load.stop();
  const mibs = series.map((s) => s.mib);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const drift = mean(series.filter((s) => s.t_s >= MINUTES * 60 - 60).map((s) => s.mib)) - mean(series.filter((s) => s.t_s < 60).map((s) => s.mib));
  const audits = stack.log.filter((line) => / audit [\d.]+ s: worst precision/.test(line)).length;
  return `${label}: ${l.failed}/${l.sent} requests failed${audits > 0 ? `, ${audits} audit points` : ""}; up RSS MiB first ${mibs[0]!.toFixed(1)}, min ${Math.min(...mibs).toFixed(1)}, max ${Math.max(...mibs).toFixed(1)}; last minute's mean − first minute's ${drift >= 0 ? "+" : ""}${drift.toFixed(1)} MiB`;
}

const [audited, plain] = await Promise.all([startStack([...SHAPE, "--audit", "--audit-interval", "1"]), startStack(SHAPE)]);
try {
  console.log(`up under ${RATE} req/s for ${MINUTES} min, two stacks at once (1 agent + 1 mocker × 2 workers + frontend each)`);
  for (const line of await Promise.all([watch("with --audit (1 s)", audited), watch("without --audit", plain)])) console.log(`  ${line}`);
  console.log(machineLine());
} finally {
  await Promise.all([audited.stop(), plain.stop()]);
}
