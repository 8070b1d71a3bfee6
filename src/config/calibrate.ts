// `kvcr-mock calibrate` options: the measured run, the held-out share and the profile to write;
// the stack the run was served by (as replay takes it: workers, router, KV and scheduler limits);
// arrivals for a run that has no send times. Timing flags are not taken: the fit is the timing.
import { kvCacheOptions, engineCoreOptions } from "./engine.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";
import { replayRouterOptions } from "./replay.ts";

const { speedupRatio: _s, decodeSpeedupRatio: _d, timingModel: _m, timingProfile: _p, plannerProfileData: _n, timingExtrapolate: _x, gpuMemoryUtilization: _g, prefillMs: _pm, decodeMs: _dm, seed: _seed, ...schedulerOptions } = engineCoreOptions;
const { loraReplicas: _l, numWorkers, ...routerOptions } = replayRouterOptions;
// Without the flag, the workers the run's requests went to (kvcr-mock bench records them), else 1.
const stackOptions = { numWorkers: { ...numWorkers, default: undefined, description: "Workers that served the run, each with --data-parallel-size ranks (default: as many as the run's per_worker counts name, else 1)" }, ...routerOptions };

export const calibrateOptions = defineOptions({
  ...group("Run and profile", {
    from: {
      kind: "string",
      nonEmpty: true,
      description: "The measured run: vllm bench serve --save-result --save-detailed JSON, kvcr-mock bench --save-detailed JSON, or aiperf's export (its artifact directory or profile_export.jsonl)",
    },
    out: { kind: "string", nonEmpty: true, description: "Write the fitted timing profile (JSON) here; - prints it instead of the report" },
    holdout: { kind: "number", min: 0.01, max: 0.9, default: 0.3, description: "Share of the run's requests held out of the fit and judged on" },
    name: { kind: "string", nonEmpty: true, description: "The profile's name (default: the run file's name)" },
    seed: { kind: "int", min: 0, max: Number.MAX_SAFE_INTEGER, default: 0, description: "Seed of the held-out draw, of drawn arrivals and of random routing" },
    outputJson: { kind: "string", nonEmpty: true, description: "Also write the report (fitted costs, held-out accuracy) as JSON to FILE" },
  }),
  ...group("Arrivals", {
    concurrency: { kind: "int", min: 1, description: "A run without start_times: it kept N requests in flight (default: its max_concurrency)" },
    requestRate: { kind: "number", min: 0.000001, allowInfinity: true, description: "A run without start_times: it sent R requests per second, Poisson (default: its request_rate)" },
  }),
  ...stackOptions,
  ...kvCacheOptions,
  // Without the flags, what the server's vllm:cache_config_info said (bench --save-detailed keeps it), else the engine's defaults.
  blockSize: { ...kvCacheOptions.blockSize, default: undefined, description: "Tokens per KV block of the server (default: its vllm:cache_config_info in the run, else 64); vLLM's default is 16" },
  numGpuBlocksOverride: { ...kvCacheOptions.numGpuBlocksOverride, default: undefined, description: "G1 (GPU) KV blocks per rank of the server, its log's \"# GPU blocks\" (default: its vllm:cache_config_info in the run, else 16384)" },
  ...schedulerOptions,
});

export type CalibrateConfig = ConfigOf<typeof calibrateOptions>;

export function calibrateProblems(c: CalibrateConfig): string[] {
  const problems: string[] = [];
  if (c.from === undefined) problems.push("--from: give the measured run to fit (a bench --save-detailed JSON or aiperf's export)");
  if (c.out === undefined) problems.push("--out: give the file to write the fitted profile to (- prints it)");
  if (c.concurrency !== undefined && c.requestRate !== undefined) problems.push("--concurrency and --request-rate: choose one arrival mode");
  if (c.numHostBlocks > 0 && !c.enablePrefixCaching) problems.push("--num-host-blocks: a host tier requires prefix caching (drop --no-enable-prefix-caching)");
  return problems;
}
