// Prefix-cache reuse of `replay` on both Mooncake traces, beside independent references:
// with one worker, one request at a time and a G1 that never evicts, the reuse must
// equal the share of prompt blocks seen before in the trace (leading blocks whose whole prefix
// appeared earlier, below the prompt_len − 1 cap); with a finite G1 it must equal a plain LRU of
// the same size (src/core/replay/simulator.test.ts pins that). Also prints the reuse of the
// routed runs the README quotes. Reuse does not depend on machine load.
// Run: npx bun bench/replay-reuse.ts
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { buildReport } from "../src/core/replay/report.ts";
import { simulate, type SimulationOptions } from "../src/core/replay/simulator.ts";
import { parseMooncakeTrace } from "../src/core/workload/mooncake-trace.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";

const hasher = createBlockHasher();
const BS = 512; // = the traces' block size: one engine block per hash id
const TRACES = ["mooncake_conversation_trace.jsonl", "mooncake_synthetic_trace.jsonl"];

for (const name of TRACES) {
  const text = readFileSync(resolve(import.meta.dir, "../traces", name), "utf8");
  const rows = text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as { input_length: number; hash_ids: number[] });
  // Reference: hash-id prefixes seen before, from the trace alone.
  const seen = new Set<string>();
  let cached = 0, prompt = 0;
  for (const r of rows) {
    const full = Math.floor(r.input_length / BS);
    const cap = Math.floor((r.input_length - 1) / BS);
    let k = 0;
    while (k < cap && seen.has(r.hash_ids.slice(0, k + 1).join(","))) k++;
    cached += k * BS;
    prompt += r.input_length;
    for (let j = 0; j < full; j++) seen.add(r.hash_ids.slice(0, j + 1).join(","));
  }
  const trace = parseMooncakeTrace(text).requests;
  const base: SimulationOptions = { engine: { blockSize: BS, numGpuBlocks: 2_000_000 }, numWorkers: 1, routerMode: "round-robin", arrival: { kind: "concurrency", concurrency: 1 }, seed: 0 };
  const report = (opts: SimulationOptions) => buildReport(simulate(trace, opts, { hasher }), { routerMode: opts.routerMode, wallTimeMs: 1 });
  const unbounded = report(base);
  console.log(`${name}: ${trace.length} requests, ${prompt.toLocaleString("en-US")} prompt tokens`);
  console.log(`  never-evicting G1, one request at a time: replay ${unbounded.prefix_cache_reuse_ratio.toFixed(4)}, reference (blocks seen before) ${(cached / prompt).toFixed(4)} ${unbounded.cached_tokens === cached ? "(equal)" : "(DIFFER)"}`);
  const defaults = report({ ...base, engine: {}, arrival: { kind: "trace", speedupRatio: 1 } });
  const routed = report({ ...base, engine: {}, numWorkers: 8, routerMode: "kv", arrival: { kind: "trace", speedupRatio: 1 } });
  console.log(`  trace arrivals, engine defaults (block 64, 16,384 blocks): 1 worker ${defaults.prefix_cache_reuse_ratio.toFixed(4)}, 8 workers kv-routed ${routed.prefix_cache_reuse_ratio.toFixed(4)}`);
}
