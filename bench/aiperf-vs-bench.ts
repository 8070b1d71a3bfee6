// aiperf 0.13.0 and `kvcr-mock bench` on the same stack and the same Mooncake trace: the first
// `rows` rows of the conversation trace (the same lengths and hash_ids sharing, 512 tokens per hash
// id), closed loop at concurrency 8, completions, the server's token counts. The stack is
// `up --no-kv-state-agent --tokenizer <model-files>` (speedup 4), so the server counts aiperf's
// text prompts as aiperf's tokenizer does; a fresh stack for every run (cold caches), the two
// clients alternated, `rounds` rounds each. The verdict is `bench --compare` over the rounds:
// aiperf's side from its records (bench/aiperf's files read as a bench result).
// Needs the peers environment. Run: bun bench/aiperf-vs-bench.ts [rounds=3] [rows=120]
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findPeersPython, PEERS_HINT } from "../scripts/lib/peers.ts";
import { resultFromAiperf } from "../src/roles/shared/measure/aiperf-read.ts";
import { figure } from "./lib/figures.ts";
import { machineLine } from "./lib/machine.ts";

const ROOT = resolve(import.meta.dir, "..");
const CLI = join(ROOT, "src/cli.ts");
const rounds = Number(process.argv[2] ?? "3");
const rows = Number(process.argv[3] ?? "120");
if (!Number.isInteger(rounds) || rounds < 2 || !Number.isInteger(rows) || rows < 10) throw new Error("usage: bun bench/aiperf-vs-bench.ts [rounds ≥ 2] [rows ≥ 10]");
const python = findPeersPython();
if (python === undefined) throw new Error(`no peers environment: ${PEERS_HINT}`);
const AIPERF = join(python, "..", "aiperf");
const REPO = "kvcr-mock/mock-model";

const dir = mkdtempSync(join(tmpdir(), "kvcr-aiperf-vs-bench-"));
const hub = join(dir, "hub");

async function run(argv: string[], env: Record<string, string> = {}): Promise<string> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  const [out, err, code] = [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited];
  if (code !== 0) throw new Error(`${argv.slice(0, 3).join(" ")} exited ${code}:\n${(out + err).slice(-3000)}`);
  return out;
}

/** A fresh stack; the callback runs against its frontend, then the stack stops. */
async function withStack<T>(tokenizerDir: string, f: (url: string) => Promise<T>): Promise<T> {
  const state = join(dir, `state-${Math.random().toString(36).slice(2)}.json`);
  const up = Bun.spawn([process.execPath, CLI, "up", "--no-kv-state-agent", "--tokenizer", tokenizerDir, "--speedup-ratio", "4", "--http-port", "0", "--state-file", state, "--log-level", "warn"], { stdout: "ignore", stderr: "pipe" });
  try {
    const deadline = performance.now() + 60_000;
    while (!existsSync(state)) {
      if (up.exitCode !== null || performance.now() > deadline) throw new Error(`the stack did not come up:\n${(await new Response(up.stderr).text()).slice(-2000)}`);
      await Bun.sleep(50);
    }
    return await f((JSON.parse(readFileSync(state, "utf8")) as { frontend_url: string }).frontend_url);
  } finally {
    up.kill("SIGTERM");
    await up.exited;
  }
}

try {
  const snapshot = (await run([process.execPath, CLI, "model-files", "--out", hub, "--hub-repo", REPO, "--log-level", "warn"])).trim();
  const trace = join(dir, "trace.jsonl");
  writeFileSync(trace, readFileSync(join(ROOT, "traces/mooncake_conversation_trace.jsonl"), "utf8").trim().split("\n").slice(0, rows).join("\n") + "\n");
  const benchRuns: unknown[] = [];
  const aiperfRuns: unknown[] = [];
  for (let round = 1; round <= rounds; round++) {
    const benchOut = join(dir, `bench-${round}.json`);
    await withStack(snapshot, (url) =>
      run([process.execPath, CLI, "bench", "--url", url, "--trace", trace, "--concurrency", "8", "--save-detailed", "--output-json", benchOut, "--log-level", "warn", "--disable-tqdm"]),
    );
    benchRuns.push({ ...(JSON.parse(readFileSync(benchOut, "utf8")) as object), label: "bench", round });
    const artifacts = join(dir, `aiperf-${round}`);
    await withStack(snapshot, (url) =>
      run(
        [AIPERF, "profile", "--model", "mock-model", "--url", url, "--endpoint-type", "completions", "--streaming", "--tokenizer", REPO, "--use-server-token-count", "--ui-type", "none", "--input-file", trace, "--custom-dataset-type", "mooncake_trace", "--no-fixed-schedule", "--concurrency", "8", "--request-count", String(rows), "--artifact-dir", artifacts],
        { HOME: dir, HF_HUB_CACHE: hub, HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1", NO_COLOR: "1" },
      ),
    );
    const summary = join(artifacts, "profile_export_aiperf.json");
    const records = join(artifacts, "profile_export.jsonl");
    aiperfRuns.push({ ...resultFromAiperf({ doc: JSON.parse(readFileSync(summary, "utf8")), path: summary }, { text: readFileSync(records, "utf8"), path: records }), label: "aiperf", round });
    console.log(`round ${round} done`);
  }
  const [b, a] = [join(dir, "bench.json"), join(dir, "aiperf.json")];
  writeFileSync(b, JSON.stringify({ runs: benchRuns }));
  writeFileSync(a, JSON.stringify({ runs: aiperfRuns }));
  console.log(`\n$ kvcr-mock bench --compare bench.json,aiperf.json   (${rounds} rounds each, the first ${rows} conversation-trace rows)`);
  const text = await run([process.execPath, CLI, "bench", "--compare", `${b},${a}`]);
  console.log(text.replaceAll(dir + "/", ""));
  const json = JSON.parse(await run([process.execPath, CLI, "bench", "--compare", `${b},${a}`, "--output-json", "-"])) as { verdict: { metric: string; ratio: number }[] | null };
  for (const [metric, better] of [["mean_ttft_ms", "lower"], ["mean_itl_ms", "lower"], ["output_throughput", "higher"]] as const) {
    const v = json.verdict?.find((e) => e.metric === metric);
    if (v) figure(`aiperf / bench ${metric}`, v.ratio, "ratio", better);
  }
  console.log(machineLine("the stack and one client at a time share them"));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
