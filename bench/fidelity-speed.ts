// Frontend speed against Dynamo's: Dynamo 1.6.1's frontend (`--router-mode kv`) over 4 kvcr-mock
// workers under Dynamo's runtime, and kvcr-mock's frontend (kv) over 4 kvcr-mock workers of its
// own, both fleets fast (speedup 0: a request's engine time is nil) and the same workload (16
// shared prefixes of 256 tokens + 64 unique, 1 output token), fresh stacks per side and round, the
// sides alternated, Dynamo the baseline:
//   saturation — 64 requests in flight for 8 s: routed requests per second, with the verdict's interval;
//   1,000 req/s — Poisson arrivals for 8 s: p99 end-to-end latency through each stack (the fleet
//                 adds its request plane and a zero-time engine step; the frontends are what differ).
// The mockers' own speed (tokens per second per core, Dynamo's mocker against kvcr-mock's):
// bench/dynamo-frontend.ts. Needs the peers environment. Run: bun bench/fidelity-speed.ts [rounds=3]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pinnedPeersPython, roundsArg, runBench, writeStackFile, type StackSettings } from "./lib/dynamo-sides.ts";
import { machineLine } from "./lib/machine.ts";
import { median } from "./lib/router-scenarios.ts";

const rounds = roundsArg();
const env = { ...process.env, KVCR_PEERS_PYTHON: pinnedPeersPython() };
const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-fidelity-speed-"));
const s: StackSettings = { workers: 4, routerMode: "kv", engine: { block_size: 16, num_host_blocks: 0, speedup_ratio: 0 } };
const sides = `dynamo-frontend=${writeStackFile(dir, "dynamo", "dynamo-frontend/kvcr-mock-mocker", s)},kvcr-mock-frontend=${writeStackFile(dir, "kvcr", "kvcr-mock-frontend/kvcr-mock-mocker", s)}`;
const workload = ["--num-prefixes", "16", "--prefix-tokens", "256", "--suffix-tokens", "64", "--output-tokens", "1", "--duration", "8", "--rounds", String(rounds)];

try {
  console.log("\n## saturation: 64 in flight");
  await runBench(["--compare-stacks", sides, ...workload, "--concurrency", "64"], join(dir, "sat.json"), env, ["request throughput", "mean E2EL (ms)", "p99 E2EL (ms)"]);
  console.log("\n## 1,000 req/s");
  const paced = await runBench(["--compare-stacks", sides, ...workload, "--request-rate", "1000"], join(dir, "paced.json"), env, ["request throughput", "p50 E2EL (ms)", "p99 E2EL (ms)"]);
  for (const side of ["dynamo-frontend", "kvcr-mock-frontend"]) {
    const p99 = paced.runs.filter((r) => r.label === side).map((r) => r.p99_e2el_ms as number);
    console.log(`${side}: p99 E2E at 1,000 req/s, median of ${p99.length} rounds: ${median(p99).toFixed(2)} ms (${p99.map((v) => v.toFixed(2)).join(", ")})`);
  }
  console.log(machineLine("the stacks and the load client share them"));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
