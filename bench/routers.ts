// kvcr-mock's kv router against the routers teams deploy, on one fleet (4 workers in direct mode,
// a G1 of 160 blocks of 64 tokens each), from the shipped stack files:
//   1. the verdict: `bench --compare-stacks kv=router-comparison.yaml,sglang=sglang-router.yaml
//      (cache_aware),vllm=vllm-router.yaml (consistent_hash)` on a workload where routing matters
//      (8 prefixes of 4,096 tokens: two fit in a worker's cache, all eight only across the four),
//      text prompts (the routers match text), fresh stacks, `rounds` rounds (default 5): each
//      router against kv on prefix reuse and mean TTFT, with its interval;
//   2. the fleet is not the bottleneck: each stack at its router's saturation (fast workers at
//      speedup 0, 1 output token, text prompts, 64 in flight from a separate client process, 3 s
//      rounds, median of 3), the CPU per routed request of the router process and of the mocker.
//   3. prefill/decode: kvcr-mock's own prefill router against vllm-router's and sglang-router's P/D
//      modes on one disaggregated fleet (2 prefill + 2 decode workers), `--compare-stacks`, the
//      same workload: verdicts on TTFT and ITL.
// Needs the peers environment (`bun scripts/peers-env.ts`). Run: bun bench/routers.ts [rounds] [verdict|cpu|pd]
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findPeersPython, PEERS_HINT } from "../scripts/lib/peers.ts";
import { figure } from "./lib/figures.ts";
import { runHttpLoad, type HttpLoadReport } from "./lib/http-load.ts";
import { machineLine } from "./lib/machine.ts";

const ROOT = resolve(import.meta.dir, "..");
const CLI = join(ROOT, "src/cli.ts");
const rounds = Number(process.argv[2] ?? "5");
if (!Number.isInteger(rounds) || rounds < 2) throw new Error(`rounds: got ${JSON.stringify(process.argv[2])}, expected an integer of at least 2 (a verdict needs the spread between stacks)`);
const python = findPeersPython();
if (python === undefined) throw new Error(`no peers environment: ${PEERS_HINT}`);
const env = { ...process.env, KVCR_PEERS_PYTHON: python };
const STACKS = [
  ["kv", "examples/router-comparison.yaml"],
  ["sglang-router", "examples/sglang-router.yaml"],
  ["vllm-router", "examples/vllm-router.yaml"],
] as const;
const part = process.argv[3];
if (part !== undefined && part !== "verdict" && part !== "cpu" && part !== "pd") throw new Error(`part: got ${JSON.stringify(part)}, expected verdict, cpu or pd (default: all three)`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (part === undefined || part === "verdict") await verdict(STACKS.map(([n, f]) => [n, join(ROOT, f)]), "prefix_cache_reuse_ratio");
if (part === undefined || part === "cpu") await saturation();
if (part === undefined || part === "pd") await pdVerdict();
console.log(machineLine("the stack (mocker, router) and the load client share them"));

/** 1. The verdict, as a user gets it: each side a stack file, the first the baseline. */
async function verdict(sides: readonly (readonly [string, string])[], first: "prefix_cache_reuse_ratio" | "mean_itl_ms"): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-routers-"));
  try {
    const out = join(dir, "verdict.json");
    const argv = [process.execPath, CLI, "bench", "--compare-stacks", sides.map(([n, f]) => `${n}=${f}`).join(","), "--prompt-format", "text", "--num-prefixes", "8", "--prefix-tokens", "4096", "--output-tokens", "16", "--requests", "96", "--concurrency", "8", "--rounds", String(rounds), "--output-json", out, "--log-level", "warn"];
    console.log(`$ kvcr-mock ${argv.slice(2).join(" ").replaceAll(ROOT + "/", "").replaceAll(dir + "/", "")}`);
    const child = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", env });
    const [text, err, code] = [await new Response(child.stdout).text(), await new Response(child.stderr).text(), await child.exited];
    if (code !== 0) throw new Error(`bench exited ${code}:\n${err.slice(-3000)}`);
    const lines = text.split("\n");
    console.log(text.slice(0, text.indexOf("\n\n")));
    // The side-by-side rows behind the headline verdicts (each side over its rounds).
    const header = lines.findIndex((l) => l.startsWith("---"));
    for (const row of [lines[header - 1], lines[header], ...["request throughput", "prefix cache reuse ratio", "mean TTFT (ms)", "p90 TTFT (ms)", "mean ITL (ms)"].map((r) => lines.find((l) => l.startsWith(r)))]) console.log(row ?? "");
    const doc = JSON.parse(readFileSync(out, "utf8")) as { verdict: { metric: string; side: string; ratio: number }[] };
    for (const [side] of sides.slice(1)) {
      for (const [metric, better] of [[first, first === "mean_itl_ms" ? "lower" : "higher"], ["mean_ttft_ms", "lower"]] as const) {
        const v = doc.verdict.find((e) => e.side === side && e.metric === metric);
        if (v) figure(`${side} / ${sides[0]![0]} ${metric}`, v.ratio, "ratio", better);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 3. The P/D routers on one disaggregated fleet, kvcr-mock's own prefill router the baseline. */
async function pdVerdict(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-routers-pd-"));
  try {
    const own = join(dir, "kvcr-mock-pd.yaml");
    writeFileSync(own, "stack:\n  kv_state_agent: false\n  prefill_workers: 2\n  decode_workers: 2\nmockers:\n  num_host_blocks: 0\n");
    console.log("\nPrefill/decode, 2 + 2 workers:");
    await verdict([["kvcr-mock-pd", own], ["vllm-router-pd", join(ROOT, "examples/vllm-router-pd.yaml")], ["sglang-router-pd", join(ROOT, "examples/sglang-router-pd.yaml")]], "mean_itl_ms");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Text prompts (sglang-router refuses token-id prompts): 8 shared 48-word prefixes + 16 words of each request's own. */
function textRequests(url: string): { url: string; body: string }[] {
  return Array.from({ length: 128 }, (_, i) => {
    const words = [...Array.from({ length: 48 }, (_, k) => `p${i % 8}w${k}`), ...Array.from({ length: 16 }, (_, k) => `r${i}w${k}`)];
    return { url, body: JSON.stringify({ model: "mock-model", prompt: words.join(" "), max_tokens: 1 }) };
  });
}

interface Saturated extends HttpLoadReport {
  routerUs: number;
  mockerUs: number;
}

/** 2. CPU per routed request at the router's saturation, router process and mocker process. */
async function saturation(): Promise<void> {
  console.log("\nAt the router's saturation (speedup 0, 1 output token, 64 in flight, 3 s rounds, median of 3):");
  for (const [name, file] of STACKS) {
    const sdir = mkdtempSync(join(tmpdir(), "kvcr-bench-routers-"));
    const state = join(sdir, "state.json");
    const up = Bun.spawn([process.execPath, CLI, "up", "--config", join(ROOT, file), "--http-port", "0", "--speedup-ratio", "0", "--state-file", state, "--log-level", "warn"], { stdout: "ignore", stderr: "pipe", env });
    try {
      const deadline = performance.now() + 60_000;
      while (!existsSync(state)) {
        if (up.exitCode !== null || performance.now() > deadline) throw new Error(`${name}: the stack did not come up:\n${(await new Response(up.stderr).text()).slice(-2000)}`);
        await Bun.sleep(50);
      }
      const s = JSON.parse(readFileSync(state, "utf8")) as { frontend_url: string; processes: { name: string; pid: number }[] };
      const pid = (n: string) => s.processes.find((p) => p.name === n)!.pid;
      const runs: Saturated[] = [];
      for (let r = 0; r < 3; r++) {
        const [router0, mocker0] = [await cpuSeconds(pid("frontend")), await cpuSeconds(pid("mocker-0"))];
        const load = await runHttpLoad({ url: "", requests: textRequests(`${s.frontend_url}/v1/completions`), body: "completion", mode: { kind: "closed", concurrency: 64 }, durationMs: 3000, warmupMs: 500 });
        if (load.firstError) console.log(`  ${name}: first error: ${load.firstError}`);
        const per = (sec: number) => (sec * 1e6) / Math.max(1, load.made);
        runs.push({ ...load, routerUs: per((await cpuSeconds(pid("frontend"))) - router0), mockerUs: per((await cpuSeconds(pid("mocker-0"))) - mocker0) });
      }
      const [rps, routerUs, mockerUs] = [median(runs.map((r) => r.requestsPerS)), median(runs.map((r) => r.routerUs)), median(runs.map((r) => r.mockerUs))];
      const failed = runs.reduce((n, r) => n + r.failed, 0);
      console.log(
        `  ${name.padEnd(13)} ${rps.toFixed(0).padStart(6)} req/s (rounds ${runs.map((r) => r.requestsPerS.toFixed(0)).join(", ")}; failed ${failed}); ` +
          `router CPU ${routerUs.toFixed(0)} µs, mocker CPU ${mockerUs.toFixed(0)} µs per request (mocker / router ${(mockerUs / routerUs).toFixed(2)})`,
      );
      figure(`${name} saturated req/s`, rps, "req/s", "higher");
      figure(`${name} mocker / router CPU per request`, mockerUs / routerUs, "ratio", "lower");
    } finally {
      up.kill("SIGTERM");
      await up.exited;
      rmSync(sdir, { recursive: true, force: true });
    }
  }
}
