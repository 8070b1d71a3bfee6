// Router fidelity against Dynamo: two identical fresh fleets of kvcr-mock workers, one behind
// Dynamo 1.6.1's own frontend (`--router-mode kv`, its defaults), one behind kvcr-mock's frontend
// (kv, its defaults, which are Dynamo's: docs/FIDELITY.md lists them):
//   verdict   — `bench --compare-stacks` on a workload where routing matters (4 workers with a G1
//               of 160 blocks of 64 tokens, 8 shared prefixes of 4,096 tokens: two fit a worker,
//               all eight only across the four), fresh stacks per side and round, Dynamo the
//               baseline: prefix reuse and mean TTFT with their intervals;
//   agreement — a sequential deterministic workload (the Mooncake conversation trace's first
//               `requests` rows as token prompts less their shared first block, one at a time,
//               50 ms apart, temperature 0, 4 output tokens): the share of decisions with a unique best worker that both routers
//               send to the same worker (the same by what it holds, bench/lib/agreement.ts), with
//               its 95 % interval; ties apart. Dynamo names its choice in `nvext.worker_id`
//               (extra_fields), kvcr-mock's frontend in `x-kvcr-worker`.
// Needs the peers environment. Run: bun bench/fidelity-router.ts [rounds=3] [verdict|agreement] [requests=600]
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expandHashIds, parseTraceLine } from "../src/core/workload/mooncake-trace.ts";
import { pickFreePorts } from "../src/transport/port-hold.ts";
import { agreement, PrefixHoldings, wilson, type Decision } from "./lib/agreement.ts";
import { CLI, pinnedPeersPython, roundsArg, ROWS, runBench, TRACE, writeStackFile, type Side, type StackSettings } from "./lib/dynamo-sides.ts";
import { machineLine } from "./lib/machine.ts";

const rounds = roundsArg();
const part = process.argv[3];
if (part !== undefined && part !== "verdict" && part !== "agreement") throw new Error(`part: got ${JSON.stringify(part)}, expected verdict or agreement (default: both)`);
const requests = Number(process.argv[4] ?? "600");
const python = pinnedPeersPython();
const env = { ...process.env, KVCR_PEERS_PYTHON: python };
const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-fidelity-router-"));
const DYNAMO: Side = "dynamo-frontend/kvcr-mock-mocker";
const OURS: Side = "kvcr-mock-frontend/kvcr-mock-mocker";

try {
  if (part === undefined || part === "verdict") {
    const s: StackSettings = { workers: 4, routerMode: "kv", engine: { block_size: 64, num_gpu_blocks_override: 160, num_host_blocks: 0, speedup_ratio: 1 } };
    console.log(`\n## verdict: ${s.workers} workers, ${JSON.stringify(s.engine)}`);
    await runBench(["--compare-stacks", `dynamo-frontend=${writeStackFile(dir, "v-dynamo", DYNAMO, s)},kvcr-mock-frontend=${writeStackFile(dir, "v-kvcr", OURS, s)}`,
      "--num-prefixes", "8", "--prefix-tokens", "4096", "--output-tokens", "16", "--requests", "96", "--concurrency", "8", "--rounds", String(rounds)], join(dir, "verdict.json"), env, ROWS);
  }
  if (part === undefined || part === "agreement") await agreementPart();
  console.log(machineLine("the stacks and the client share them"));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function agreementPart(): Promise<void> {
  const [BLOCK, WORKERS] = [64, 4];
  const s: StackSettings = { workers: WORKERS, routerMode: "kv", engine: { block_size: BLOCK, num_gpu_blocks_override: 65536, num_host_blocks: 0, speedup_ratio: 0 } };
  console.log(`\n## agreement: the trace's first ${requests} requests, one at a time, ${s.workers} workers, ${JSON.stringify(s.engine)}`);
  const lines = readFileSync(TRACE, "utf8").split("\n").slice(0, requests);
  // Every row starts with one shared block (hash id 0, a system prompt): at rest its holder would
  // win every decision. Without it, each conversation starts on a worker of its own (a tie) and
  // its later turns find their own prefix there.
  const prompts = lines.flatMap((l, i) => {
    const row = parseTraceLine(l, 512);
    if (typeof row === "string") throw new Error(`${TRACE}:${i + 1}: ${row}`);
    return row.inputLength > 512 && row.hashIds[0] === 0 ? [Array.from(expandHashIds(row.hashIds.subarray(1), row.inputLength - 512, 512))] : [];
  });
  const results: ReturnType<typeof agreement>[] = [];
  for (let round = 1; round <= rounds; round++) {
    // Fresh fleets each round, started one after the other, then driven in lockstep.
    const [dynamo, ours] = [await startStack("dynamo", DYNAMO, s), await startStack("kvcr", OURS, s)];
    try {
      const fleets = { a: new PrefixHoldings(BLOCK), b: new PrefixHoldings(BLOCK) };
      const seen = { a: new Set<string>(), b: new Set<string>() };
      // Workers never chosen hold nothing: placeholders stand for them.
      const all = (s: Set<string>) => [...s, ...Array.from({ length: WORKERS - s.size }, (_, k) => `(unused ${k})`)];
      const decisions: Decision[] = [];
      for (const tokens of prompts) {
        const blocks = fleets.a.blocks(tokens);
        const [a, b] = [await route(ours.url, tokens, "ours"), await route(dynamo.url, tokens, "dynamo")];
        seen.a.add(a);
        seen.b.add(b);
        decisions.push({ a: fleets.a.view(blocks, a, all(seen.a)), b: fleets.b.view(blocks, b, all(seen.b)) });
        fleets.a.served(a, blocks);
        fleets.b.served(b, blocks);
        await Bun.sleep(50);
      }
      const got = agreement(decisions);
      results.push(got);
      console.log(`round ${round}: ${got.agreed} of ${got.counted} decisions with a unique best worker agree (${(got.share * 100).toFixed(1)} %, 95 % ${(got.low * 100).toFixed(1)}–${(got.high * 100).toFixed(1)} %); ties ${got.ties}`);
    } finally {
      await Promise.all([dynamo.stop(), ours.stop()]);
    }
  }
  const [agreed, counted] = [results.reduce((n, r) => n + r.agreed, 0), results.reduce((n, r) => n + r.counted, 0)];
  const pooled = wilson(agreed, counted);
  console.log(`all rounds: ${agreed} of ${counted} agree: ${(pooled.share * 100).toFixed(1)} % (95 % ${(pooled.low * 100).toFixed(1)}–${(pooled.high * 100).toFixed(1)} %), target ≥ 95 %; ties ${results.reduce((n, r) => n + r.ties, 0)}`);
}

/** `up` from a stack file on a picked port, ready once its state file is written. */
async function startStack(name: string, side: Side, s: StackSettings): Promise<{ url: string; stop(): Promise<void> }> {
  const [port] = pickFreePorts("127.0.0.1", 1);
  const state = join(dir, `${name}.state.json`);
  rmSync(state, { force: true });
  const argv = [process.execPath, CLI, "up", "--config", writeStackFile(dir, `a-${name}`, side, s), "--http-port", String(port), "--agent-port", "0", "--state-file", state, "--log-level", "warn"];
  const child = Bun.spawn(argv, { env, stdin: "pipe", stdout: "ignore", stderr: "pipe" });
  const stderr = new Response(child.stderr).text();
  const deadline = Date.now() + 120_000;
  while (!existsSync(state)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${side}: up ${child.exitCode !== null ? `exited ${child.exitCode}` : "was not ready in 120 s"}: ${argv.join(" ")}\n${(await stderr).slice(-3000)}`);
    }
    await Bun.sleep(100);
  }
  // Dynamo's frontend lists the workers before its event subscriptions have settled.
  await Bun.sleep(1000);
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGTERM");
      await Promise.race([child.exited, Bun.sleep(15_000)]);
      child.kill("SIGKILL");
    },
  };
}

/** Sends one prompt; returns the worker that served it, as its frontend names it. */
async function route(base: string, tokens: number[], who: "ours" | "dynamo"): Promise<string> {
  const r = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "mock-model", prompt: tokens, max_tokens: 4, temperature: 0, nvext: { extra_fields: ["worker_id"] } }),
  });
  const body = (await r.json()) as { nvext?: { worker_id?: { decode_worker_id?: number; decode_dp_rank?: number } } };
  if (!r.ok) throw new Error(`${who}: ${r.status} ${JSON.stringify(body).slice(0, 500)}`);
  const worker = who === "ours" ? r.headers.get("x-kvcr-worker") : body.nvext?.worker_id?.decode_worker_id?.toString();
  if (!worker) throw new Error(`${who}: the response names no worker (${who === "ours" ? "x-kvcr-worker" : "nvext.worker_id"})`);
  return worker;
}
