// Peak RSS of `kvcr-mock replay` on the synthetic Mooncake trace with and without a host tier
// (a tiny G2 once cost 5× the memory of none). Each run is a cold child process
// (`bun src/cli.ts replay …`); peak RSS is the child's getrusage maxrss. Median of N runs.
// Run: npx bun bench/replay-memory.ts [runs=3] [hostBlocks=0,50,100000]
import { loadavg } from "node:os";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const TRACE = resolve(ROOT, "traces/mooncake_synthetic_trace.jsonl");
const runs = Number(process.argv[2] ?? 3);
const hostBlocks = (process.argv[3] ?? "0,50,100000").split(",").map(Number);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(`bun ${Bun.version}, load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}; ${runs} cold run(s) each; replay --trace mooncake_synthetic_trace.jsonl (1 worker, engine defaults)`);
for (const nh of hostBlocks) {
  const rss: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const child = Bun.spawn([process.execPath, "src/cli.ts", "replay", "--trace", TRACE, "--num-host-blocks", String(nh), "--output-json", "-"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const out = await new Response(child.stdout).text();
    const code = await child.exited;
    wall.push((performance.now() - t0) / 1000);
    if (code !== 0) throw new Error(`replay exited ${code}: ${await new Response(child.stderr).text()}`);
    JSON.parse(out); // the run completed and printed its report
    // maxRSS is in bytes on Linux under Bun's resourceUsage().
    rss.push(child.resourceUsage()!.maxRSS);
  }
  const mb = rss.map((b) => b / 1e6);
  console.log(`--num-host-blocks ${String(nh).padEnd(7)} peak RSS median ${median(mb).toFixed(0)} MB (runs: ${mb.map((x) => x.toFixed(0)).join(", ")}), wall median ${median(wall).toFixed(2)} s`);
}
