// `kvcr-mock bench` options: the endpoint and how to talk to it (vLLM's `bench serve`
// spellings where one exists), the workload and arrivals shared with `replay`, router-mode
// comparisons and sweeps, the HTML report, and — for --with-replay — the engine and router
// settings of the stack under test, so its simulation runs the same configuration.
import { splitUrls, urlListProblem } from "./bench-urls.ts";
import { engineOptions, engineProblems } from "./engine.ts";
import { parseLoraNames, parseZipf } from "./lora-modules.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";
import { benchLayoutOptions, benchLayoutProblems } from "./bench-layouts.ts";
import { compareTargetOptions, compareTargetProblems, compareUrlsText } from "./bench-compare-targets.ts";
import { replayRouterOptions, reportOptions, sessionWorkloadProblems, workloadFlags } from "./replay.ts";
import { LIVE_ROUTER_MODES } from "../protocol/router-modes.ts";
export const DEFAULT_PERCENTILES = "50,90,99";
/** Rounds of a router-mode comparison on fresh stacks unless --rounds says otherwise. */
export const DEFAULT_MODE_ROUNDS = 3;

/** vLLM's datasets that need a file, a tokenizer or a hub download; bench refuses them with this reason. */
const DATASET_REFUSED = "needs a dataset file or a tokenizer, which bench does not load; use --dataset-name random, --dataset-name prefix_repetition or --trace FILE (a Mooncake JSONL trace)";

export const benchOptions = defineOptions({
  ...group("Target", {
    url: { kind: "string", nonEmpty: true, aliases: ["base-url"], description: "Base URL of the OpenAI-compatible server (e.g. http://127.0.0.1:8000; a trailing /v1 is dropped); several comma-separated: requests go to each in turn, as a round-robin load balancer, past one that refuses connections" },
    host: { kind: "string", nonEmpty: true, description: "Without --url: the server's host (vLLM's --host; the target is http://HOST:PORT)" },
    port: { kind: "int", min: 1, max: 65535, description: "Without --url: the server's port (vLLM's --port; with --host alone, 8000)" },
    model: { kind: "string", nonEmpty: true, description: "Model name to request (default: the first one /v1/models lists)" },
    servedModelName: { kind: "string", nonEmpty: true, description: "Model name sent in each request when it differs from --model (vLLM's --served-model-name)" },
    loraModules: { kind: "string", nonEmpty: true, variadic: true, description: "LoRA adapter names (as the server lists them): each request names one as its model, and the result splits by adapter (vLLM's bench --lora-modules; a trace row's lora_name wins)" },
    loraAssignment: { kind: "enum", choices: ["random", "round-robin"], default: "random", description: "How --lora-modules picks each request's adapter: at random (seeded) or in turn (vLLM's --lora-assignment)" },
    loraPopularity: { kind: "string", nonEmpty: true, description: "zipf:S: random picks favour the first --lora-modules names, the k-th drawn with weight 1/k^S (default: uniform)" },
    backend: { kind: "enum", choices: ["openai", "openai-chat", "vllm"], description: "vLLM's --backend: openai / vllm (completions) or openai-chat (chat completions: sets --endpoint /v1/chat/completions and --prompt-format text unless given); the result's backend" },
    endpoint: { kind: "string", nonEmpty: true, default: "/v1/completions", description: "API path: /v1/completions or /v1/chat/completions (chat takes text prompts only)" },
    promptFormat: { kind: "enum", choices: ["tokens", "text"], default: "tokens", description: "Send prompts as token-id arrays (exact prefix sharing) or as text (one word per token id); a chat endpoint always gets text" },
    stream: { kind: "bool", default: true, description: "Stream responses (server-sent events); TTFT and ITL need it" },
    ignoreEos: { kind: "bool", default: true, description: "Ask for exactly the workload's output length (ignore_eos + min_tokens, as vLLM accepts them)" },
    apiKey: { kind: "string", nonEmpty: true, env: "OPENAI_API_KEY", description: "Sent as Authorization: Bearer KEY" },
    readyCheckTimeoutSec: { kind: "int", min: 0, default: 0, description: "Before measuring, send the first request until one completes, for at most this many seconds (vLLM's --ready-check-timeout-sec; not counted; 0 sends none)" },
    requestTimeout: { kind: "number", min: 0.001, default: 300, description: "Seconds one request may take before it is counted as failed (timeout)" },
    workerHeader: { kind: "string", nonEmpty: true, default: "x-kvcr-worker", description: "Response header naming the worker that served a request (per_worker spread)" },
    header: { kind: "string", nonEmpty: true, variadic: true, description: "KEY=VALUE … extra headers sent with every request (vLLM's --header)" },
    requestIdPrefix: { kind: "string", description: "Each request carries x-request-id: <prefix><n> (n from 0, in send order), as vllm bench serve sends it" },
    extraBody: { kind: "json", description: "JSON object merged into every request body (vLLM's --extra-body)" },
    temperature: { kind: "number", min: 0, default: 0, description: "Sampling temperature sent with every request (vLLM's bench leaves it to the server; 0 keeps runs comparable)" },
    topP: { kind: "number", min: 0, max: 1, description: "top_p sent with every request" },
    topK: { kind: "int", min: -1, description: "top_k sent with every request" },
    minP: { kind: "number", min: 0, max: 1, description: "min_p sent with every request" },
    frequencyPenalty: { kind: "number", description: "frequency_penalty sent with every request" },
    presencePenalty: { kind: "number", description: "presence_penalty sent with every request" },
    repetitionPenalty: { kind: "number", min: 0, description: "repetition_penalty sent with every request" },
  }),
  ...workloadFlags,
  ...group("Workload", {
    requests: { ...workloadFlags.requests, aliases: ["num-prompts"] },
    numPrefixes: { ...workloadFlags.numPrefixes, aliases: ["prefix-repetition-num-prefixes"] },
    prefixTokens: { ...workloadFlags.prefixTokens, aliases: ["prefix-repetition-prefix-len"] },
    suffixTokens: { ...workloadFlags.suffixTokens, aliases: ["prefix-repetition-suffix-len"] },
    outputTokens: { ...workloadFlags.outputTokens, aliases: ["prefix-repetition-output-len"] },
    datasetName: {
      kind: "enum",
      choices: ["random", "prefix_repetition", "shared-prefix", "agentic"],
      refused: Object.fromEntries(["sharegpt", "burstgpt", "sonnet", "random-mm", "random-rerank", "hf", "custom", "spec_bench", "txt-slices", "timed_trace", "speed_bench"].map((d) => [d, `--dataset-name ${d}: ${DATASET_REFUSED}`])),
      description: "random: vLLM's random dataset (--random-* flags); prefix_repetition or shared-prefix: the shared-prefix workload (default, or random when a --random-* / --input-len flag is given; --trace wins over both); agentic: the synthetic agentic sessions (--sessions, default 16)",
    },
    // No declared defaults: giving any of these is what selects the random dataset without --dataset-name.
    randomInputLen: { kind: "int", min: 0, description: "random: mean sampled prompt tokens (default 1024)" },
    randomOutputLen: { kind: "int", min: 1, description: "random: mean output tokens (default 128)" },
    randomPrefixLen: { kind: "int", min: 0, description: "random: tokens of one random prefix every prompt starts with, prompt = prefix + sampled (default 0)" },
    randomRangeRatio: { kind: "number", min: 0, max: 1, description: "random: lengths are uniform over [L·(1−r), L·(1+r)], r in [0, 1) (default 0)" },
    inputLen: { kind: "int", min: 0, description: "vLLM's general --input-len: sets --random-input-len" },
    outputLen: { kind: "int", min: 1, description: "vLLM's general --output-len: sets --random-output-len and --output-tokens" },
    warmupRequests: { kind: "int", min: 0, default: 0, aliases: ["num-warmups"], description: "Send the workload's first N requests before measuring (not counted)" },
    duration: { kind: "number", min: 0.001, description: "Stop sending after this many seconds (in-flight requests finish); with the synthetic workload and no --requests, requests are generated until then" },
  }),
  ...group("Arrivals", {
    requestRate: { kind: "number", min: 0.000001, allowInfinity: true, description: "Requests per second (Poisson, or gamma with --burstiness); inf sends all at once (vLLM's default)" },
    burstiness: { kind: "number", min: 0.000001, allowInfinity: true, default: 1, description: "With --request-rate: gamma shape of the gaps between arrivals (1 Poisson, below 1 burstier, inf evenly spaced; mean stays 1/rate), as vLLM's --burstiness" },
    maxConcurrency: { kind: "int", min: 1, description: "vLLM's --max-concurrency: at most N requests in flight; alone it is --concurrency N, with --request-rate arrivals wait for a free slot" },
  }),
  ...group("Report", {
    percentiles: { kind: "string", nonEmpty: true, default: DEFAULT_PERCENTILES, aliases: ["metric-percentiles"], description: "Comma-separated percentiles reported for TTFT, TPOT, ITL and E2EL" },
    percentileMetrics: { kind: "string", nonEmpty: true, description: "Comma-separated metrics (ttft, tpot, itl, e2el) whose mean/median/std/pNN keys the JSON result carries (default: all four)" },
    goodput: { kind: "string", nonEmpty: true, variadic: true, description: "KEY:MS … service-level objectives (ttft, tpot, e2el in ms): request_goodput counts the completed requests that met all of them, per second" },
    saveResult: { kind: "bool", default: false, description: "Write the JSON result to --result-dir/--result-filename (default name as vLLM's: LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json)" },
    appendResult: { kind: "bool", default: false, description: "As --save-result, appending to the file (one JSON document per line)" },
    saveDetailed: { kind: "bool", default: false, description: "Add per-request arrays to the JSON result: input_lens, output_lens, ttfts and itls (seconds), start_times, generated_texts, errors, and e2els, cached_lens and workers (what --compare's verdict and calibrate read); and server_metrics, the server's vLLM counters from /metrics before and after the run" },
    resultDir: { kind: "string", nonEmpty: true, description: "Directory of the --save-result file (created if missing)" },
    resultFilename: { kind: "string", nonEmpty: true, description: "Name of the --save-result file" },
    label: { kind: "string", nonEmpty: true, description: "The run's label in the result and the --save-result file name (default: the backend)" },
    metadata: { kind: "string", nonEmpty: true, variadic: true, description: "KEY=VALUE … copied to the top level of the JSON result" },
    disableTqdm: { kind: "bool", default: false, description: "No progress bar (it is drawn on a terminal only anyway)" },
    report: { kind: "string", nonEmpty: true, description: "Write a self-contained HTML report (charts inlined, works offline) to FILE" },
    withReplay: { kind: "bool", default: false, description: "Also simulate the same workload with `replay` (use --num-workers, --router-mode and the engine flags of the stack) and print predicted vs measured" },
  }),
  ...reportOptions,
  ...group("Faults and audit", {
    faults: { kind: "string", nonEmpty: true, description: "Apply this fault schedule (YAML or JSON list of {at, target, fault}) during each run; implies the audit" },
    audit: { kind: "bool", default: false, description: "Sample the mockers' truth and the router's index every --audit-interval: index precision / recall, recovery after faults, routing regret" },
    auditInterval: { kind: "number", min: 0.05, max: 3600, description: "Seconds between audit samples (default 1 when --audit or --faults is given; giving it turns the audit on)" },
    mockerUrls: { kind: "string", nonEmpty: true, description: "The stack's mockers, comma-separated base URLs (for a router without GET /v1/index; default: found through the frontend's index)" },
    compare: {
      kind: "string",
      nonEmpty: true,
      description: "A,B: print the verdict of two results and their headline figures side by side, and run nothing: --output-json files (their --save-detailed arrays), or aiperf's artifact directories or export files (its per-request records); --output-json F or - writes the verdict as JSON",
    },
    exportAiperf: { kind: "string", nonEmpty: true, description: "Also write each run as aiperf's export files (profile_export_aiperf.json, profile_export.jsonl) into DIR, for aiperf's own tools (one run: DIR itself; several: DIR/<label>[-round-N])" },
  }),
  ...group("Comparisons and fresh stacks", {
    compareRouterModes: { kind: "string", nonEmpty: true, description: `Run the same workload against one stack per router mode (a comma-separated list of ${LIVE_ROUTER_MODES.join(", ")}): the verdict (the first mode is the baseline), then the modes side by side` },
    urlPerMode: { kind: "string", nonEmpty: true, description: "The stack of each compared mode: kv=URL,round-robin=URL (without --compare-router-modes: --compare-urls by its older name)" },
    sweepConcurrency: { kind: "intList", min: 1, description: "Run the workload at each concurrency (8,32,128) and print the points side by side" },
    rounds: { kind: "int", min: 1, max: 1000, description: `Runs of each compared side, rounds outermost (the sides' order alternating from round to round), each on a fresh stack and drawing its workload with --seed + round − 1; the verdict's intervals rest on them (default ${DEFAULT_MODE_ROUNDS} for --compare-router-modes on fresh stacks, else 1; at least 5 recommended)` },
    stackConfig: { kind: "string", nonEmpty: true, description: "Without --url / --url-per-mode: the `up` stack file each fresh stack is started from (default: up's defaults); bench sets its router mode and ports" },
  }),
  ...group("Accepted from vllm bench serve, no effect", {
    tokenizer: { kind: "string", nonEmpty: true, description: "Not needed: prompts are token ids (or one word per id), and output tokens are the server's usage.completion_tokens" },
    tokenizerMode: { kind: "string", nonEmpty: true, description: "Not needed (no tokenizer is loaded)" },
    skipTokenizerInit: { kind: "bool", default: false, description: "Not needed (no tokenizer is loaded)" },
    trustRemoteCode: { kind: "bool", default: false, description: "Not needed (no tokenizer is loaded)" },
    disableShuffle: { kind: "bool", default: false, description: "Generated workloads are not shuffled anyway" },
    noOversample: { kind: "bool", default: false, description: "Generated workloads have exactly --num-prompts requests anyway" },
    skipChatTemplate: { kind: "bool", default: false, description: "Prompts are never templated client-side anyway" },
  }),
  ...compareTargetOptions,
  ...benchLayoutOptions,
  ...replayRouterOptions,
  ...engineOptions,
});

export type BenchConfig = ConfigOf<typeof benchOptions>;

/** "50,90,99.9" → [50, 90, 99.9], or a problem line. */
export function parsePercentiles(text: string): number[] | string {
  const parts = text.split(",").map((p) => p.trim());
  const out: number[] = [];
  for (const p of parts) {
    const q = /^\d+(\.\d+)?$/.test(p) ? Number(p) : NaN;
    if (!(q > 0 && q <= 100)) return `--percentiles: got "${p}" in "${text}", expected numbers above 0 and at most 100, comma-separated`;
    if (!out.includes(q)) out.push(q);
  }
  return out;
}

/** "kv=URL,round-robin=URL" → map, or problem lines. */
export function parseUrlPerMode(text: string): Map<string, string> | string[] {
  const out = new Map<string, string>();
  const problems: string[] = [];
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    const mode = part.slice(0, eq).trim();
    const url = part.slice(eq + 1).trim();
    if (eq === -1 || !(LIVE_ROUTER_MODES as readonly string[]).includes(mode) || !/^https?:\/\/\S+$/.test(url)) {
      problems.push(`--url-per-mode: got "${part}", expected MODE=URL with MODE one of ${LIVE_ROUTER_MODES.join(", ")} and an http(s) URL`);
    } else out.set(mode, url);
  }
  return problems.length > 0 ? problems : out;
}

export function parseModes(text: string): string[] | string {
  const modes = text.split(",").map((m) => m.trim());
  const bad = modes.filter((m) => !(LIVE_ROUTER_MODES as readonly string[]).includes(m));
  if (bad.length > 0 || modes.length === 0) return `--compare-router-modes: got "${text}", expected a comma-separated list of ${LIVE_ROUTER_MODES.join(", ")}`;
  if (new Set(modes).size !== modes.length) return `--compare-router-modes: "${text}" names a mode twice`;
  return modes;
}

/** Audit interval in seconds, or undefined when no audit runs (--audit, --faults or --audit-interval turn it on). */
export function auditIntervalOf(c: Pick<BenchConfig, "audit" | "faults" | "auditInterval">): number | undefined {
  return c.auditInterval ?? (c.audit || c.faults !== undefined ? 1 : undefined);
}

/** "http://a:1,http://b:2" → the URLs and any problem lines. */
export function parseMockerUrls(text: string): { urls: string[]; problems: string[] } {
  const urls = text.split(",").map((u) => u.trim()).filter(Boolean);
  const problems = urls.filter((u) => !/^https?:\/\/\S+$/.test(u)).map((u) => `--mocker-urls: got "${u}", expected an http(s) base URL such as http://127.0.0.1:8100`);
  if (urls.length === 0) problems.push(`--mocker-urls: got "${text}", expected comma-separated http(s) base URLs of the mockers`);
  return { urls, problems };
}

/** "A.json,B.json" → the two paths, or a problem line. */
export function parseCompare(text: string): [string, string] | string {
  const parts = text.split(",").map((p) => p.trim());
  return parts.length === 2 && parts.every(Boolean) ? [parts[0]!, parts[1]!] : `--compare: got "${text}", expected two result files, comma-separated: A.json,B.json`;
}

/** Rounds per compared side: as given, else DEFAULT_MODE_ROUNDS for router modes on fresh stacks, else 1. */
export function roundsOf(c: Pick<BenchConfig, "rounds" | "compareRouterModes" | "compareLayouts" | "compareStacks" | "urlPerMode" | "url" | "host" | "port">): number {
  if (c.rounds !== undefined) return c.rounds;
  if (c.compareStacks !== undefined) return DEFAULT_MODE_ROUNDS;
  return (c.compareRouterModes !== undefined || c.compareLayouts !== undefined) && c.urlPerMode === undefined && targetUrl(c) === undefined ? DEFAULT_MODE_ROUNDS : 1;
}

export function benchProblems(c: BenchConfig): string[] {
  if (c.compare !== undefined) {
    const p = parseCompare(c.compare);
    const problems = typeof p === "string" ? [p] : [];
    if (c.exportAiperf !== undefined) problems.push("--export-aiperf: --compare runs nothing to export; drop --export-aiperf");
    return problems;
  }
  const problems = engineProblems(c);
  if (c.loraModules !== undefined) {
    const names = parseLoraNames(c.loraModules);
    if (typeof names === "string") problems.push(names);
  }
  if (c.loraPopularity !== undefined) {
    const zipf = parseZipf(c.loraPopularity);
    if (typeof zipf === "string") problems.push(zipf);
    else if (c.loraModules === undefined) problems.push("--lora-popularity: needs --lora-modules (the adapters it weighs)");
    else if (c.loraAssignment === "round-robin") problems.push("--lora-popularity: weighs random picks; --lora-assignment round-robin takes the adapters in turn");
  }
  if (c.mockerUrls !== undefined) {
    problems.push(...parseMockerUrls(c.mockerUrls).problems);
    if (auditIntervalOf(c) === undefined) problems.push("--mocker-urls: only used by the audit and fault schedules; add --audit or --faults");
  }
  const finiteRate = c.requestRate !== undefined && c.requestRate !== Infinity;
  if (c.concurrency !== undefined && finiteRate) problems.push("--concurrency and --request-rate: choose one arrival mode (or --max-concurrency N to cap a rate's requests in flight)");
  if (c.concurrency !== undefined && c.maxConcurrency !== undefined) problems.push("--concurrency and --max-concurrency: give one (alone, --max-concurrency N is --concurrency N)");
  if (c.burstiness !== 1 && !finiteRate) problems.push("--burstiness: shapes the gaps of --request-rate arrivals; give a finite --request-rate");
  // A --duration run's synthetic workload is only an upper bound: sent all at once, all of it would go out at the start.
  if (c.duration !== undefined && c.trace === undefined && c.requests === undefined && !finiteRate && c.concurrency === undefined && c.maxConcurrency === undefined && c.sweepConcurrency === undefined) {
    problems.push("--duration: arrivals all at once would send every request generated for the run at its start; pace them with --concurrency N or --request-rate R (or give --requests)");
  }
  problems.push(...sessionWorkloadProblems(c));
  if (c.sessions !== undefined && c.datasetName !== undefined && c.datasetName !== "agentic") problems.push(`--sessions runs the agentic workload; --dataset-name ${c.datasetName} runs another (drop one, or use --dataset-name agentic)`);
  if (c.randomRangeRatio !== undefined && c.randomRangeRatio >= 1) problems.push(`--random-range-ratio: got ${c.randomRangeRatio}, expected a number in [0, 1)`);
  // The random dataset's flags shape nothing else: given beside another workload they would be silently unused.
  const randomFlags = ([["--random-input-len", c.randomInputLen], ["--random-output-len", c.randomOutputLen], ["--random-prefix-len", c.randomPrefixLen], ["--random-range-ratio", c.randomRangeRatio], ["--input-len", c.inputLen]] as const)
    .filter(([, v]) => v !== undefined)
    .map(([flag]) => flag);
  const otherWorkload = c.trace !== undefined ? "--trace" : c.datasetName !== undefined && c.datasetName !== "random" ? `--dataset-name ${c.datasetName}` : undefined;
  if (randomFlags.length > 0 && otherWorkload !== undefined) problems.push(`${randomFlags.join(", ")}: only shape --dataset-name random; ${otherWorkload} runs another workload (drop them, or use --dataset-name random)`);
  if (c.goodput !== undefined) {
    const g = parseGoodput(c.goodput);
    if (typeof g === "string") problems.push(g);
  }
  if (c.percentileMetrics !== undefined) {
    const m = parsePercentileMetrics(c.percentileMetrics);
    if (typeof m === "string") problems.push(m);
  }
  for (const [flag, text] of [["--header", c.header], ["--metadata", c.metadata]] as const) {
    const pairs = text === undefined ? undefined : parsePairs(text, flag);
    if (typeof pairs === "string") problems.push(pairs);
  }
  if (c.extraBody !== undefined && (typeof c.extraBody !== "object" || c.extraBody === null || Array.isArray(c.extraBody))) problems.push(`--extra-body: got ${JSON.stringify(c.extraBody)}, expected a JSON object such as '{"top_k": 5}'`);
  if (c.url !== undefined && (c.host !== undefined || c.port !== undefined)) problems.push("--url and --host/--port: give one (the target is --url, or http://HOST:PORT)");
  if ((c.resultDir !== undefined || c.resultFilename !== undefined) && !c.saveResult && !c.appendResult) problems.push("--result-dir / --result-filename: name the --save-result file; add --save-result");
  if (c.sweepConcurrency !== undefined && (c.concurrency !== undefined || c.requestRate !== undefined)) problems.push("--sweep-concurrency sets the concurrency of each point: drop --concurrency / --request-rate");
  if (c.trace === undefined && c.prefixTokens + c.suffixTokens < 1) problems.push("--prefix-tokens + --suffix-tokens: a synthetic prompt needs at least 1 token");
  const q = parsePercentiles(c.percentiles);
  if (typeof q === "string") problems.push(q);
  if (!/^\//.test(c.endpoint)) problems.push(`--endpoint: got "${c.endpoint}", expected a path starting with / (e.g. /v1/completions)`);
  const badUrl = c.url === undefined ? undefined : urlListProblem(c.url);
  if (badUrl !== undefined) problems.push(badUrl);
  let modes: string[] = [];
  if (c.compareRouterModes !== undefined) {
    const m = parseModes(c.compareRouterModes);
    if (typeof m === "string") problems.push(m);
    else modes = m;
  }
  const named = compareUrlsText(c);
  const fresh = targetUrl(c) === undefined && c.urlPerMode === undefined && named === undefined;
  problems.push(...compareTargetProblems(c, targetUrl(c) !== undefined));
  if (c.urlPerMode !== undefined && c.compareRouterModes !== undefined) {
    const parsed = parseUrlPerMode(c.urlPerMode);
    if (Array.isArray(parsed)) problems.push(...parsed);
    else for (const m of modes) if (!parsed.has(m)) problems.push(`--url-per-mode: no URL for mode ${m} (got ${[...parsed.keys()].join(", ") || "none"})`);
    if (c.url !== undefined) problems.push("--url and --url-per-mode: give one (a comparison runs against each mode's URL)");
  } else if (targetUrl(c) !== undefined && c.compareRouterModes !== undefined) {
    problems.push("--compare-router-modes with --url: one URL is one router mode; give --url-per-mode kv=URL,round-robin=URL, or neither to start a fresh stack per mode");
  } else if (fresh && c.compareRouterModes === undefined && c.compareLayouts === undefined && c.sweepConcurrency === undefined && c.compareStacks === undefined) {
    problems.push("--url: required (the OpenAI-compatible server to drive, e.g. http://127.0.0.1:8000; also --base-url, or --host/--port), unless --compare-urls names several, --compare-router-modes, --compare-stacks or --sweep-concurrency start fresh stacks, or --compare reads two results");
  }
  if (c.stackConfig !== undefined && !fresh && c.compareStacks === undefined) problems.push(`--stack-config: only for fresh stacks (drop ${named !== undefined ? named.flag : "--url / --url-per-mode"})`);
  problems.push(...benchLayoutProblems(c, targetUrl(c) !== undefined));
  if (c.rounds !== undefined && c.compareRouterModes === undefined && c.compareLayouts === undefined && c.sweepConcurrency === undefined && c.compareStacks === undefined && named === undefined) {
    problems.push("--rounds: repeats the sides of a comparison; add --compare-stacks, --compare-urls, --compare-router-modes or --sweep-concurrency (--compare reads the rounds a result file holds)");
  }
  if (c.withReplay && c.duration !== undefined) problems.push("--with-replay: the simulation runs the whole workload; use --requests instead of --duration");
  if (c.withReplay && (c.compareRouterModes !== undefined || c.sweepConcurrency !== undefined)) problems.push("--with-replay: compares one live run with its simulation; drop --compare-router-modes / --sweep-concurrency");
  return problems;
}

/**
 * The server to drive: --url (vLLM's --base-url) with a trailing /v1 dropped (bench appends
 * /v1/… paths itself, and vLLM's own clients are often given …/v1), or http://HOST:PORT from
 * --host/--port; undefined when none is given.
 */
export function targetUrl(c: Partial<Pick<BenchConfig, "url" | "host" | "port">>): string | undefined {
  if (c.url !== undefined) return splitUrls(c.url)[0] ?? c.url; // the first of several frontends
  if (c.host === undefined && c.port === undefined) return undefined;
  const host = c.host ?? "127.0.0.1";
  return `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${c.port ?? 8000}`;
}

export const GOODPUT_METRICS = ["ttft", "tpot", "e2el"] as const;
export type GoodputSlo = Partial<Record<(typeof GOODPUT_METRICS)[number], number>>;

/** "ttft:500 tpot:50" (or comma-separated) → SLOs in ms, as vLLM's --goodput; or a problem line. */
export function parseGoodput(text: string): GoodputSlo | string {
  const out: GoodputSlo = {};
  for (const pair of text.split(/[\s,]+/).filter(Boolean)) {
    const [name, value, extra] = pair.split(":");
    const ms = value !== undefined && /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
    if (extra !== undefined || !(GOODPUT_METRICS as readonly string[]).includes(name ?? "") || Number.isNaN(ms)) {
      return `--goodput: got "${pair}", expected KEY:MS pairs with KEY one of ${GOODPUT_METRICS.join(", ")} and MS a number ≥ 0 (e.g. ttft:500 tpot:50)`;
    }
    out[name as keyof GoodputSlo] = ms;
  }
  return out;
}

export const PERCENTILE_METRICS = ["ttft", "tpot", "itl", "e2el"] as const;

export function parsePercentileMetrics(text: string): (typeof PERCENTILE_METRICS)[number][] | string {
  const names = text.split(",").map((m) => m.trim());
  const bad = names.filter((m) => !(PERCENTILE_METRICS as readonly string[]).includes(m));
  return bad.length > 0 ? `--percentile-metrics: got "${bad.join(",")}", expected a comma-separated list of ${PERCENTILE_METRICS.join(", ")}` : (names as (typeof PERCENTILE_METRICS)[number][]);
}

/** "k=v k2=v2" → pairs (vLLM's --header / --metadata), or a problem line. */
export function parsePairs(text: string, flag: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const item of text.split(/\s+/).filter(Boolean)) {
    const eq = item.indexOf("=");
    if (eq <= 0) return `${flag}: got "${item}", expected KEY=VALUE`;
    out[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return out;
}

/** vLLM's random-dataset defaults. */
export const RANDOM_DEFAULTS = { inputLen: 1024, outputLen: 128, prefixLen: 0, rangeRatio: 0 } as const;

export function isChat(endpoint: string): boolean {
  return /\/chat\/completions\/?$/.test(endpoint);
}
