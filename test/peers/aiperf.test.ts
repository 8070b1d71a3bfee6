// aiperf 0.13.0, Dynamo's benchmark client, against kvcr-mock (peers environment): offline, its
// tokenizer the `model-files` files in a hub cache (`--hub-repo`), the server's token counts, against the frontend
// (synthetic prompts) and against one worker's own API (a Mooncake trace); its artifact directory
// read back by `bench --compare` with a verdict against a bench run, and by `calibrate`; a bench run exported in
// aiperf's shapes read by `aiperf plot`.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CHROMIUM } from "../chromium.ts";
import { CLI_ENTRY, makeTempDir, pipeOutput, REPO_ROOT, runCli, spawnChild, waitFor, withTimeout } from "../harness.ts";
import { PEERS_PYTHON, peersAvailable } from "../peers.ts";

const MODEL = "mock-model";

const TOKENIZER = "kvcr-mock/mock-model";

/** Offline, the tokenizer looked up by name in the hub cache `model-files --hub-repo` wrote (aiperf 0.13.0 looks even a path up there once offline). */
function aiperfEnv(tmp: string): Record<string, string> {
  return { HOME: tmp, TMPDIR: tmp, NO_COLOR: "1", HF_HUB_CACHE: join(tmp, "hub"), HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1" };
}

async function aiperf(args: string[], tmp: string): Promise<string> {
  const aiperfBin = join(PEERS_PYTHON!, "..", "aiperf");
  await using child = spawnChild([aiperfBin, ...args], { env: aiperfEnv(tmp) });
  let out = "";
  pipeOutput(child, (t) => (out += t));
  const code = await withTimeout(child.proc.exited, 120_000, `aiperf ${args[0]}`);
  if (code !== 0) throw new Error(`aiperf ${args.join(" ")} exited ${code}:\n${out.slice(-3000)}`);
  return out;
}

const summaryOf = (dir: string) => JSON.parse(readFileSync(join(dir, "profile_export_aiperf.json"), "utf8")) as Record<string, { avg: number }> & { error_summary: unknown[] };

describe.if(peersAvailable())("aiperf against kvcr-mock (peers environment)", () => {
  test("aiperf profiles the frontend and a worker's API offline; bench --compare reads its artifacts with a verdict; aiperf plot reads bench's export", async () => {
    await using tmp = await makeTempDir("kvcr-aiperf-");
    expect((await runCli(["model-files", "--out", join(tmp.path, "hub"), "--hub-repo", TOKENIZER, "--log-level", "warn"])).exitCode).toBe(0);
    const stateFile = join(tmp.path, "state.json");
    await using up = spawnChild([process.execPath, CLI_ENTRY, "up", "--no-kv-state-agent", "--worker-api", "--http-port", "0", "--state-file", stateFile, "--log-level", "warn"], { env: { TMPDIR: tmp.path } });
    let upOut = "";
    pipeOutput(up, (t) => (upOut += t));
    await waitFor(() => existsSync(stateFile), { what: `the stack (${upOut.slice(-1000)})`, timeoutMs: 30_000 });
    const state = JSON.parse(readFileSync(stateFile, "utf8")) as { frontend_url: string; processes: { name: string; worker_api_urls?: string[] }[] };
    const common = ["--model", MODEL, "--endpoint-type", "chat", "--streaming", "--tokenizer", TOKENIZER, "--use-server-token-count", "--ui-type", "none"];

    // The frontend, synthetic prompts.
    const viaFrontend = join(tmp.path, "frontend");
    await aiperf(["profile", ...common, "--url", state.frontend_url, "--concurrency", "4", "--request-count", "32", "--isl", "128", "--osl", "8", "--extra-inputs", "ignore_eos:true", "--artifact-dir", viaFrontend], tmp.path);
    const s = summaryOf(viaFrontend);
    expect([s.request_count!.avg, s.error_summary.length]).toEqual([32, 0]);
    expect(s.output_sequence_length!.avg).toBe(8); // the server's counts: every request ran to its max_tokens

    // One worker's own API, a Mooncake trace (its first rows, shorter answers), its arrivals ignored.
    const trace = join(tmp.path, "trace.jsonl");
    const rows = readFileSync(join(REPO_ROOT, "traces/mooncake_conversation_trace.jsonl"), "utf8").trim().split("\n").slice(0, 12).map((l) => ({ ...(JSON.parse(l) as object), output_length: 4 }));
    writeFileSync(trace, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const worker = state.processes.find((p) => p.name === "mocker-0")!.worker_api_urls![0]!;
    const viaWorker = join(tmp.path, "worker");
    await aiperf(["profile", ...common, "--url", worker, "--input-file", trace, "--custom-dataset-type", "mooncake_trace", "--no-fixed-schedule", "--concurrency", "2", "--request-count", "12", "--artifact-dir", viaWorker], tmp.path);
    const w = summaryOf(viaWorker);
    expect([w.request_count!.avg, w.error_summary.length]).toEqual([12, 0]);

    // bench against the same frontend, then the two side by side with a verdict from aiperf's records.
    const benchJson = join(tmp.path, "bench.json");
    const bench = await runCli(["bench", "--url", state.frontend_url, "--backend", "openai-chat", "--requests", "32", "--concurrency", "4", "--random-input-len", "128", "--random-output-len", "8", "--save-detailed", "--output-json", benchJson, "--export-aiperf", join(tmp.path, "bench-aiperf")]);
    expect(bench.exitCode, bench.stderr).toBe(0);
    const compared = await runCli(["bench", "--compare", `${viaFrontend},${benchJson}`, "--output-json", "-"]);
    expect(compared.exitCode, compared.stderr).toBe(0);
    const verdict = JSON.parse(compared.stdout) as { columns: string[]; verdict: { metric: string }[] | null; no_verdict?: string };
    expect(verdict.no_verdict).toBeUndefined();
    expect(verdict.verdict!.map((e) => e.metric)).toContain("mean_ttft_ms");

    // calibrate fits a profile to aiperf's own records (their send times as the arrivals), as to bench's run.
    for (const [from, name] of [[viaFrontend, "aiperf"], [benchJson, "bench"]] as const) {
      const out = join(tmp.path, `${name}-profile.json`);
      const fitted = await runCli(["calibrate", "--from", from, "--out", out, "--output-json", join(tmp.path, `${name}-fit.json`)]);
      expect(fitted.exitCode, fitted.stderr).toBe(0);
      expect(fitted.stderr).not.toContain("no start_times");
      expect(fitted.stdout).toContain("MAPE per request");
      expect((JSON.parse(readFileSync(out, "utf8")) as { form: string }).form).toBe("parametric");
      expect((JSON.parse(readFileSync(join(tmp.path, `${name}-fit.json`), "utf8")) as { requests: number }).requests).toBe(32);
    }

    // aiperf's own plotting reads bench's export as it reads its own runs.
    if (CHROMIUM || process.env.CI === "true") {
      const plots = join(tmp.path, "plots");
      const out = await aiperf(["plot", join(tmp.path, "bench-aiperf"), "--output", plots], tmp.path);
      expect(out).toContain(`Saved`);
      expect(existsSync(join(plots, "ttft_over_time.png"))).toBe(true);
      expect(readFileSync(join(plots, "aiperf_plot.log"), "utf8")).not.toContain("Skipping invalid line");
    }
    up.proc.kill("SIGTERM");
    expect(await withTimeout(up.proc.exited, 30_000, "up to stop")).toBe(0);
  }, 240_000);
});
