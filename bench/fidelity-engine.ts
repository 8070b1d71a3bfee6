// Engine fidelity against Dynamo: Dynamo 1.6.1's own frontend in round-robin (so routing cannot
// differ) over Dynamo's own mocker, and over kvcr-mock's `mocker --runtime dynamo`, the same engine
// settings on both (up renders the stack's for Dynamo's mocker through {engine_args}), fresh
// stacks per side and round, the sides alternating: `bench --compare-stacks`, verdicts with 95 %
// intervals, Dynamo's mocker the baseline. Two workloads:
//   prefixes — 8 shared prefixes of 2,048 tokens (+256 unique), 64 output tokens, 16 in flight,
//              a G1 of 160 blocks of 64 tokens per worker: round-robin brings every prefix to both
//              workers, and about half of them fit;
//   trace    — the Mooncake conversation trace's first 1,000 requests, arrivals and engine both
//              sped up 5× (speedup_ratio 5), 4 workers.
// Needs the peers environment. Run: bun bench/fidelity-engine.ts [rounds=3] [prefixes|trace]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { machineLine } from "./lib/machine.ts";
import { pinnedPeersPython, roundsArg, ROWS, runBench, TRACE, writeStackFile, type StackSettings } from "./lib/dynamo-sides.ts";

const rounds = roundsArg();
const only = process.argv[3];
if (only !== undefined && only !== "prefixes" && only !== "trace") throw new Error(`workload: got ${JSON.stringify(only)}, expected prefixes or trace (default: both)`);
const python = pinnedPeersPython();
const env = { ...process.env, KVCR_PEERS_PYTHON: python };
const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-fidelity-engine-"));

const WORKLOADS = {
  prefixes: {
    stack: { workers: 2, routerMode: "round-robin", engine: { block_size: 64, num_gpu_blocks_override: 160, num_host_blocks: 0, speedup_ratio: 10 } },
    argv: ["--num-prefixes", "8", "--prefix-tokens", "2048", "--suffix-tokens", "256", "--output-tokens", "64", "--requests", "160", "--concurrency", process.env.BENCH_CONCURRENCY ?? "16"],
  },
  trace: {
    stack: { workers: 4, routerMode: "round-robin", engine: { block_size: 64, num_host_blocks: 0, speedup_ratio: 5 } },
    argv: ["--trace", TRACE, "--requests", "1000", "--arrival-speedup-ratio", "5"],
  },
} satisfies Record<string, { stack: StackSettings; argv: string[] }>;

try {
  for (const [name, w] of Object.entries(WORKLOADS)) {
    if (only !== undefined && only !== name) continue;
    console.log(`\n## ${name}: ${w.stack.workers} workers, ${JSON.stringify(w.stack.engine)}, Dynamo's frontend --router-mode round-robin`);
    const dynamo = writeStackFile(dir, `${name}-dynamo`, "dynamo-frontend/dynamo-mocker", w.stack);
    const ours = writeStackFile(dir, `${name}-kvcr`, "dynamo-frontend/kvcr-mock-mocker", w.stack);
    await runBench(["--compare-stacks", `dynamo-mocker=${dynamo},kvcr-mock-mocker=${ours}`, ...w.argv, "--rounds", String(rounds)], join(dir, `${name}.json`), env, ROWS);
  }
  console.log(machineLine("the stack (Dynamo's frontend, the mockers) and the load client share them"));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
