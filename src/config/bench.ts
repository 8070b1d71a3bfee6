// `kvcr-mock bench` options: the endpoint and how to talk to it (vLLM's `bench serve`
// spellings where one exists), the workload and arrivals shared with `replay`, router-mode
// comparisons and sweeps, the HTML report, and — for --with-replay — the engine and router
// settings of the stack under test, so its simulation runs the same configuration.
import { engineOptions, engineProblems } from "./engine.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";
import { replayRouterOptions, reportOptions, workloadFlags } from "./replay.ts";

export const ROUTER_MODES = ["kv", "round-robin", "random"] as const;
export const DEFAULT_PERCENTILES = "50,90,99";

export const benchOptions = defineOptions({
  ...group("Target", {
    url: { kind: "string", nonEmpty: true, description: "Base URL of the OpenAI-compatible server (e.g. http://127.0.0.1:8000)" },
    model: { kind: "string", nonEmpty: true, description: "Model name to request (default: the first one /v1/models lists)" },
    endpoint: { kind: "string", nonEmpty: true, default: "/v1/completions", description: "API path: /v1/completions or /v1/chat/completions (chat takes text prompts only)" },
    promptFormat: { kind: "enum", choices: ["tokens", "text"], default: "tokens", description: "Send prompts as token-id arrays (exact prefix sharing) or as text (one word per token id)" },
    stream: { kind: "bool", default: true, description: "Stream responses (server-sent events); TTFT and ITL need it" },
    ignoreEos: { kind: "bool", default: true, description: "Ask for exactly the workload's output length (ignore_eos + min_tokens, as vLLM accepts them)" },
    apiKey: { kind: "string", nonEmpty: true, env: "OPENAI_API_KEY", description: "Sent as Authorization: Bearer KEY" },
    requestTimeout: { kind: "number", min: 0.001, default: 300, description: "Seconds one request may take before it is counted as failed (timeout)" },
    workerHeader: { kind: "string", nonEmpty: true, default: "x-kvcr-worker", description: "Response header naming the worker that served a request (per_worker spread)" },
  }),
  ...workloadFlags,
  ...group("Workload", {
    warmupRequests: { kind: "int", min: 0, default: 0, description: "Send the workload's first N requests before measuring (not counted)" },
    duration: { kind: "number", min: 0.001, description: "Stop sending after this many seconds (in-flight requests finish); with the synthetic workload and no --requests, requests are generated until then" },
  }),
  ...group("Report", {
    percentiles: { kind: "string", nonEmpty: true, default: DEFAULT_PERCENTILES, description: "Comma-separated percentiles reported for TTFT, TPOT, ITL and E2EL (vLLM --metric-percentiles)" },
    report: { kind: "string", nonEmpty: true, description: "Write a self-contained HTML report (charts inlined, works offline) to FILE" },
    withReplay: { kind: "bool", default: false, description: "Also simulate the same workload with `replay` (use --num-workers, --router-mode and the engine flags of the stack) and print predicted vs measured" },
  }),
  ...reportOptions,
  ...group("Faults and audit", {
    faults: { kind: "string", nonEmpty: true, description: "Apply this fault schedule (YAML or JSON list of {at, target, fault}) during each run; implies the audit" },
    audit: { kind: "bool", default: false, description: "Sample the mockers' truth and the router's index every --audit-interval: index precision / recall, recovery after faults, routing regret" },
    auditInterval: { kind: "number", min: 0.05, max: 3600, description: "Seconds between audit samples (default 1 when --audit or --faults is given; giving it turns the audit on)" },
    mockerUrls: { kind: "string", nonEmpty: true, description: "The stack's mockers, comma-separated base URLs (for a router without GET /v1/index; default: found through the frontend's index)" },
    compare: { kind: "string", nonEmpty: true, description: "A.json,B.json: print the headline figures of two --output-json results side by side, and run nothing" },
  }),
  ...group("Comparisons and fresh stacks", {
    compareRouterModes: { kind: "string", nonEmpty: true, description: "Run the same workload against one stack per router mode (kv,round-robin[,random]) and print them side by side" },
    urlPerMode: { kind: "string", nonEmpty: true, description: "The stack of each compared mode: kv=URL,round-robin=URL" },
    sweepConcurrency: { kind: "intList", min: 1, description: "Run the workload at each concurrency (8,32,128) and print the points side by side" },
    stackConfig: { kind: "string", nonEmpty: true, description: "Without --url / --url-per-mode: the `up` stack file each fresh stack is started from (default: up's defaults); bench sets its router mode and ports" },
  }),
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
    if (eq === -1 || !(ROUTER_MODES as readonly string[]).includes(mode) || !/^https?:\/\/\S+$/.test(url)) {
      problems.push(`--url-per-mode: got "${part}", expected MODE=URL with MODE one of ${ROUTER_MODES.join(", ")} and an http(s) URL`);
    } else out.set(mode, url);
  }
  return problems.length > 0 ? problems : out;
}

export function parseModes(text: string): string[] | string {
  const modes = text.split(",").map((m) => m.trim());
  const bad = modes.filter((m) => !(ROUTER_MODES as readonly string[]).includes(m));
  if (bad.length > 0 || modes.length === 0) return `--compare-router-modes: got "${text}", expected a comma-separated list of ${ROUTER_MODES.join(", ")}`;
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

export function benchProblems(c: BenchConfig): string[] {
  if (c.compare !== undefined) {
    const p = parseCompare(c.compare);
    return typeof p === "string" ? [p] : [];
  }
  const problems = engineProblems(c);
  if (c.mockerUrls !== undefined) {
    problems.push(...parseMockerUrls(c.mockerUrls).problems);
    if (auditIntervalOf(c) === undefined) problems.push("--mocker-urls: only used by the audit and fault schedules; add --audit or --faults");
  }
  if (c.concurrency !== undefined && c.requestRate !== undefined) problems.push("--concurrency and --request-rate: choose one arrival mode");
  if (c.sweepConcurrency !== undefined && (c.concurrency !== undefined || c.requestRate !== undefined)) problems.push("--sweep-concurrency sets the concurrency of each point: drop --concurrency / --request-rate");
  if (c.trace === undefined && c.prefixTokens + c.suffixTokens < 1) problems.push("--prefix-tokens + --suffix-tokens: a synthetic prompt needs at least 1 token");
  const q = parsePercentiles(c.percentiles);
  if (typeof q === "string") problems.push(q);
  if (!/^\//.test(c.endpoint)) problems.push(`--endpoint: got "${c.endpoint}", expected a path starting with / (e.g. /v1/completions)`);
  if (isChat(c.endpoint) && c.promptFormat === "tokens") problems.push("--prompt-format tokens: a chat endpoint takes text messages; use --prompt-format text or --endpoint /v1/completions");
  if (c.url !== undefined && !/^https?:\/\/\S+$/.test(c.url)) problems.push(`--url: got "${c.url}", expected an http(s) URL such as http://127.0.0.1:8000`);
  let modes: string[] = [];
  if (c.compareRouterModes !== undefined) {
    const m = parseModes(c.compareRouterModes);
    if (typeof m === "string") problems.push(m);
    else modes = m;
  }
  const fresh = c.url === undefined && c.urlPerMode === undefined;
  if (c.urlPerMode !== undefined) {
    if (c.compareRouterModes === undefined) problems.push("--url-per-mode: only with --compare-router-modes");
    const parsed = parseUrlPerMode(c.urlPerMode);
    if (Array.isArray(parsed)) problems.push(...parsed);
    else for (const m of modes) if (!parsed.has(m)) problems.push(`--url-per-mode: no URL for mode ${m} (got ${[...parsed.keys()].join(", ") || "none"})`);
    if (c.url !== undefined) problems.push("--url and --url-per-mode: give one (a comparison runs against each mode's URL)");
  } else if (c.url !== undefined && c.compareRouterModes !== undefined) {
    problems.push("--compare-router-modes with --url: one URL is one router mode; give --url-per-mode kv=URL,round-robin=URL, or neither to start a fresh stack per mode");
  } else if (fresh && c.compareRouterModes === undefined && c.sweepConcurrency === undefined) {
    problems.push("--url: required (the OpenAI-compatible server to drive, e.g. http://127.0.0.1:8000), unless --compare-router-modes or --sweep-concurrency start fresh stacks, or --compare reads two results");
  }
  if (c.stackConfig !== undefined && !fresh) problems.push("--stack-config: only for fresh stacks (drop --url / --url-per-mode)");
  if (c.withReplay && c.duration !== undefined) problems.push("--with-replay: the simulation runs the whole workload; use --requests instead of --duration");
  if (c.withReplay && (c.compareRouterModes !== undefined || c.sweepConcurrency !== undefined)) problems.push("--with-replay: compares one live run with its simulation; drop --compare-router-modes / --sweep-concurrency");
  return problems;
}

export function isChat(endpoint: string): boolean {
  return /\/chat\/completions\/?$/.test(endpoint);
}
