// `kvcr-mock mocker` options (dynamo.mocker spellings), the --extra-engine-args layer
// that overrides them, and the cross-field rules. The resolved config drives every behaviour.
import { readFileSync } from "node:fs";
import { rawHostProblem } from "../protocol/cache-owner.ts";
import { GET_LOAD_FORMATS } from "../protocol/sglang.ts";
import { disaggregationOptions, disaggregationProblems } from "./disaggregation.ts";
import { discoveryOptions, discoveryProblems } from "./discovery.ts";
import { dynamoRuntimeOptions, dynamoRuntimeProblems } from "./dynamo-runtime.ts";
import { engineCoreOptions, engineOptions, engineProblems, kvCacheOptions, loraBudgetOptions } from "./engine.ts";
import { parseLoraModules, parseModulesPerWorker } from "./lora-modules.ts";
import { requestLimitOptions } from "./frontend.ts";
import type { Candidate } from "./load.ts";
import { defineOptions, flagName, group, type ConfigOf } from "./options.ts";

/** The state-agent flags, with the raw-event and transfer-island flags that go with them (`up` hands them on). */
export const stateAgentOptions = defineOptions({
  ...group("State agent", {
    kvStateAgent: { kind: "bool", default: false, description: "Attach raw streams to the namespace's KV state agent instead of relaying events" },
    kvStateAgentRawHost: { kind: "string", description: "Host the state agent dials for raw events (hostname, IPv4 or [IPv6])" },
    kvStateAgentCacheSlot: { kind: "int", min: 0, description: "First CacheOwner ordinal; worker i rank r owns base + i × dp + r" },
    kvStateAgentCacheSemantics: { kind: "string", description: "Cache semantics, 32 hex (default derived from the model name)" },
    kvStateAgentRoutingScope: { kind: "string", description: "Routing scope, 32 hex (default derived from the namespace)" },
    kvStateAgentDc: { kind: "string", description: "Datacenter, 16 hex (default derived from the namespace)" },
    kvStateEndpoint: { kind: "string", nonEmpty: true, description: "Where the agent serves a slot's state (default {namespace}/kv_state_agent/slot)" },
    kvStateAgentRouterHints: { kind: "bool", default: false, description: "Advertise the router_hint capability and a `source_control_endpoint` per CacheOwner" },
  }),
  ...group("KV events", {
    kvEventsTopic: { kind: "string", default: "", description: "Raw topic in direct mode (vLLM's default is empty)" },
    kvEventsEncoding: { kind: "enum", choices: ["map", "array"], default: "map", description: "Raw events as maps (vLLM's current form) or positional arrays (vLLM 0.9–0.23, array_like structs; not with --kv-state-agent)" },
  }),
  ...group("State agent", {
    kvTransferIslandSize: { kind: "int", min: 1, description: "Workers per KV-transfer island: worker i joins domain {DYN_KV_TRANSFER_DOMAIN}-{floor(i/N)}" },
  }),
});

/**
 * vLLM's --max-model-len: prompt + max_tokens above it is refused (400), here and by the frontend,
 * which reads it from the worker record. The default is Llama-3.1-8B's context (vLLM takes it from
 * the model's config), the model whose shape --kv-bytes-per-token defaults to.
 */
export const maxModelLenOption = group("Workers and engine", {
  maxModelLen: { kind: "int", min: 1, max: 1 << 30, default: 131_072, description: "Context length in tokens: a request whose prompt + max_tokens exceed it is refused with 400 (vLLM's rule)" },
});

/** Each worker as a vLLM OpenAI server of its own (docs/commands.md, "Drive the workers with another router"). */
export const workerApiOptions = group("Worker API", {
  openaiPortBase: {
    kind: "int",
    min: 0,
    max: 65535,
    description: "Serve vLLM's OpenAI API on every worker: worker i on P + i (0 = free ports, each published in the worker's discovery record)",
  },
  openaiPorts: { kind: "intList", min: 0, max: 65535, description: "Worker API port per worker, instead of --openai-port-base; 0 = pick" },
  getLoadFormat: {
    kind: "enum",
    choices: GET_LOAD_FORMATS,
    default: "array",
    description: "Shape of the worker API's GET /get_load: array (SGLang's per-rank list, read by sglang-router) or object ({\"load\": N}, read by vllm-router)",
  },
});

export const mockerOptions = defineOptions({
  ...group("Workers and engine", {
    modelName: { kind: "string", nonEmpty: true, default: "mocker-engine", description: "Model name served" },
    numWorkers: { kind: "int", min: 1, max: 100_000, default: 1, description: "Mock workers in this process" },
  }),
  ...maxModelLenOption,
  ...kvCacheOptions,
  ...group("Workers and engine", engineCoreOptions),
  ...group("HTTP and ports", {
    zmqKvEventsPorts: { kind: "intList", min: 0, max: 65535, description: "Raw KV-event PUB base port per worker (rank r adds r); 0 = pick" },
    zmqReplayPorts: { kind: "intList", min: 0, max: 65535, description: "Replay ROUTER base port per worker (rank r adds r); 0 = pick" },
  }),
  ...group("Workers and engine", {
    extraEngineArgs: { kind: "string", nonEmpty: true, description: "JSON file with `engine` and `dynamo` sections; overrides flags" },
    staggerDelay: { kind: "number", min: 0, default: 0, description: "Seconds between starting consecutive workers" },
  }),
  ...group("HTTP and ports", {
    httpPort: { kind: "int", min: 0, max: 65535, default: 0, description: "HTTP port for /v1/generate, /health, /metrics; 0 = pick" },
    admin: { kind: "bool", default: false, description: "Serve the fault API (/admin/faults: inject event, HTTP and process faults at run time); up always enables it" },
  }),
  ...group("LoRA adapters", {
    loraModules: {
      kind: "string",
      nonEmpty: true,
      variadic: true,
      description: "LoRA adapters every worker loads at start: name=path … or vLLM's JSON form {\"name\", \"path\", \"base_model_name\"}; more load and unload at run time (POST /v1/load_lora_adapter, /v1/unload_lora_adapter)",
    },
    loraModulesPerWorker: { kind: "string", nonEmpty: true, description: "Which --lora-modules each worker loads instead of all: a JSON array, one array of adapter names per worker (up writes it from --lora-replicas)" },
  }),
  ...loraBudgetOptions,
  ...workerApiOptions,
  ...disaggregationOptions,
  ...requestLimitOptions,
  ...stateAgentOptions,
  ...discoveryOptions,
  ...dynamoRuntimeOptions,
});

export type MockerConfig = ConfigOf<typeof mockerOptions>;

type MockerKey = keyof typeof mockerOptions;
const ENGINE_KEYS = new Set<string>([...Object.keys(engineOptions), "maxModelLen"]);
const DYNAMO_KEYS = new Set<string>([...Object.keys(stateAgentOptions), "zmqKvEventsPorts", "zmqReplayPorts", "numWorkers", "modelName", "staggerDelay"]);
/** Names Dynamo's and vLLM's own engine-args files use for the same settings. */
const ALIASES: Record<string, MockerKey> = {
  num_gpu_blocks: "numGpuBlocksOverride",
  dp_size: "dataParallelSize",
  model: "modelName",
  served_model_name: "modelName",
};

const FLAT_KEYS = new Set<string>([...ENGINE_KEYS, ...DYNAMO_KEYS]);

/**
 * Reads --extra-engine-args: `{"engine": {...}, "dynamo": {...}}` with snake_case keys, or Dynamo's
 * flat form (`{"speedup_ratio": 10, "num_workers": 4}`). A single
 * `zmq_kv_events_port` / `zmq_replay_port` is a base: worker i uses base + i × dp (as `up` does).
 */
export function extraEngineArgsOverlay(config: MockerConfig, problems: string[], read = (p: string) => readFileSync(p, "utf8")): Map<string, Candidate> {
  const out = new Map<string, Candidate>();
  const path = config.extraEngineArgs;
  if (!path) return out;
  let doc: unknown;
  try {
    doc = JSON.parse(read(path));
  } catch (err) {
    problems.push(`--extra-engine-args: cannot use ${path}: ${(err as Error).message.split("\n")[0]}`);
    return out;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    problems.push(`--extra-engine-args: ${path} must hold a JSON object with "engine" and/or "dynamo" sections`);
    return out;
  }
  // Single base ports are expanded after every section is read, with the resolved dp size and
  // worker count, so key order in the file does not matter.
  const bases: [key: "zmqKvEventsPorts" | "zmqReplayPorts", base: unknown, label: string][] = [];
  // Dynamo's mocker reads a flat object of engine args ({"speedup_ratio": 10}): taken as one section of both kinds.
  const flat = !Object.keys(doc).some((k) => k === "engine" || k === "dynamo");
  const sections: [string, unknown][] = flat ? [["flat", doc]] : Object.entries(doc);
  for (const [section, body] of sections) {
    const allowed = section === "engine" ? ENGINE_KEYS : section === "dynamo" ? DYNAMO_KEYS : section === "flat" ? FLAT_KEYS : undefined;
    if (!allowed) {
      problems.push(`${section} (in ${path}): unknown section, expected "engine" or "dynamo"`);
      continue;
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      problems.push(`${section} (in ${path}): must be an object`);
      continue;
    }
    for (const [fileKey, value] of Object.entries(body as Record<string, unknown>)) {
      const label = flat ? `${fileKey} (in ${path})` : `${section}.${fileKey} (in ${path})`;
      if (section !== "engine" && (fileKey === "zmq_kv_events_port" || fileKey === "zmq_replay_port")) {
        bases.push([fileKey === "zmq_kv_events_port" ? "zmqKvEventsPorts" : "zmqReplayPorts", value, label]);
        continue;
      }
      const key = Object.hasOwn(ALIASES, fileKey) ? ALIASES[fileKey] : keyForSnake(fileKey);
      if (!key || !allowed.has(key)) {
        problems.push(`${label}: unknown key ${flat ? "(a flat file, as Dynamo's mocker reads, takes engine and mocker keys)" : `for the ${section} section`}`);
        continue;
      }
      out.set(key, { value, label });
    }
  }
  const resolvedInt = (key: "dataParallelSize" | "numWorkers") => {
    const v = out.get(key)?.value;
    return typeof v === "number" && Number.isInteger(v) && v >= 1 ? v : config[key];
  };
  const dp = resolvedInt("dataParallelSize");
  const workers = resolvedInt("numWorkers");
  for (const [key, base, label] of bases) {
    if (typeof base !== "number" || !Number.isInteger(base) || base < 0 || base > 65535) {
      problems.push(`${label}: got ${JSON.stringify(base)}, expected a base port from 0 to 65535 (0 = pick)`);
      continue;
    }
    out.set(key, { value: Array.from({ length: workers }, (_, i) => (base === 0 ? 0 : base + i * dp)), label });
  }
  return out;
}

function keyForSnake(snake: string): MockerKey | undefined {
  for (const [key, spec] of Object.entries(mockerOptions)) {
    if (flagName(key, spec).replace(/-/g, "_") === snake) return key as MockerKey;
  }
  return undefined;
}

/** Two sockets of this process asked for one port (0 = pick never clashes). */
function portClashes(c: MockerConfig): string[] {
  const owner = new Map<number, string>();
  const clashes: string[] = [];
  const claim = (port: number, who: string) => {
    if (port === 0) return;
    const first = owner.get(port);
    if (first) clashes.push(`port ${port} is asked for twice: ${first} and ${who}`);
    else owner.set(port, who);
  };
  claim(c.httpPort, "--http-port");
  if (c.kvTransferPort !== undefined) claim(c.kvTransferPort, "--kv-transfer-port");
  c.bootstrapPorts?.forEach((port, i) => claim(port, `--bootstrap-ports (worker ${i})`));
  workerApiPorts(c)?.forEach((port, i) => claim(port, `${c.openaiPorts ? "--openai-ports" : `--openai-port-base ${c.openaiPortBase} +`} ${i} (worker ${i})`));
  for (const [key, flag] of [["zmqKvEventsPorts", "--zmq-kv-events-ports"], ["zmqReplayPorts", "--zmq-replay-ports"]] as const) {
    c[key]?.forEach((base, i) => {
      if (base !== 0) for (let r = 0; r < c.dataParallelSize; r++) claim(base + r, `${flag} (worker ${i} rank ${r})`);
    });
  }
  return clashes.slice(0, 5);
}

/** Worker i's API port (0 = pick), or undefined when the worker API is off. */
export function workerApiPorts(c: Pick<MockerConfig, "openaiPortBase" | "openaiPorts" | "numWorkers">): number[] | undefined {
  if (c.openaiPorts) return c.openaiPorts;
  if (c.openaiPortBase === undefined) return undefined;
  const base = c.openaiPortBase;
  return Array.from({ length: c.numWorkers }, (_, i) => (base === 0 ? 0 : base + i));
}

function workerApiProblems(c: MockerConfig): string[] {
  const problems: string[] = [];
  if (c.openaiPortBase !== undefined && c.openaiPorts) problems.push("--openai-ports: give either --openai-port-base or --openai-ports, not both");
  if (c.openaiPorts && c.openaiPorts.length !== c.numWorkers) problems.push(`--openai-ports: got ${c.openaiPorts.length} port(s), expected exactly one per worker (${c.numWorkers})`);
  if (c.openaiPortBase !== undefined && c.openaiPortBase !== 0 && c.openaiPortBase + c.numWorkers - 1 > 65535) {
    problems.push(`--openai-port-base: ${c.openaiPortBase} + ${c.numWorkers - 1} (the last worker) exceeds port 65535`);
  }
  return problems;
}

const HEX = (n: number) => new RegExp(`^[0-9a-f]{${n}}$`);

/** State-agent mode marks KVCR-owned G2 events with `ownership`, which the positional form lacks. */
export const ARRAY_ENCODING_WITH_STATE_AGENT =
  "--kv-events-encoding array: cannot be used with --kv-state-agent (vLLM's positional events have no ownership field, which state-agent mode needs to mark KVCR-owned G2 blocks)";

/** Cross-field rules of the mocker options, run on the resolved config (extra-engine-args applied). */
export function mockerProblems(c: MockerConfig): string[] {
  const problems = [...engineProblems(c), ...discoveryProblems(c), ...dynamoRuntimeProblems(c)];
  if (c.loraModules !== undefined) {
    const modules = parseLoraModules(c.loraModules, c.modelName);
    if (typeof modules === "string") problems.push(modules);
    else if (c.loraModulesPerWorker !== undefined) {
      const placed = parseModulesPerWorker(c.loraModulesPerWorker, modules, c.numWorkers);
      if (typeof placed === "string") problems.push(placed);
    }
  } else if (c.loraModulesPerWorker !== undefined) problems.push("--lora-modules-per-worker: needs --lora-modules (the adapters it places)");
  for (const [key, flag] of [["zmqKvEventsPorts", "--zmq-kv-events-ports"], ["zmqReplayPorts", "--zmq-replay-ports"]] as const) {
    const ports = c[key];
    if (!ports) continue;
    if (ports.length !== c.numWorkers) problems.push(`${flag}: got ${ports.length} base port(s), expected exactly one per worker (${c.numWorkers})`);
    const tooHigh = ports.find((p) => p !== 0 && p + c.dataParallelSize - 1 > 65535);
    if (tooHigh !== undefined) problems.push(`${flag}: base ${tooHigh} + ${c.dataParallelSize - 1} ranks exceeds port 65535`);
  }
  if (c.zmqReplayPorts && !c.zmqKvEventsPorts) problems.push("--zmq-replay-ports: replay needs --zmq-kv-events-ports too");
  problems.push(...workerApiProblems(c));
  problems.push(...disaggregationProblems(c));
  problems.push(...portClashes(c));
  if (c.kvStateAgent) {
    const missing: [unknown, string, string][] = [
      [c.zmqKvEventsPorts, "--zmq-kv-events-ports", "the agent subscribes to each rank's raw PUB"],
      [c.numHostBlocks > 0 ? c.numHostBlocks : undefined, "--num-host-blocks", "state-agent mode reports a host tier (G2)"],
      [c.kvStateAgentRawHost, "--kv-state-agent-raw-host", "the host the agent dials"],
      [c.kvStateAgentCacheSlot, "--kv-state-agent-cache-slot", "the first CacheOwner ordinal of this process"],
    ];
    for (const [value, flag, why] of missing) if (value === undefined) problems.push(`${flag}: required with --kv-state-agent (${why})`);
  }
  if (c.kvStateAgentRawHost !== undefined) {
    const reason = rawHostProblem(c.kvStateAgentRawHost);
    if (reason) problems.push(`--kv-state-agent-raw-host: got ${JSON.stringify(c.kvStateAgentRawHost)}, ${reason}`);
  }
  // State-agent settings without state-agent mode would be silently unused: say so instead.
  if (!c.kvStateAgent) {
    for (const [value, flag] of [
      [c.kvStateAgentRouterHints || undefined, "--kv-state-agent-router-hints"],
      [c.kvStateAgentRawHost, "--kv-state-agent-raw-host"],
      [c.kvStateAgentCacheSlot, "--kv-state-agent-cache-slot"],
      [c.kvStateAgentCacheSemantics, "--kv-state-agent-cache-semantics"],
      [c.kvStateAgentRoutingScope, "--kv-state-agent-routing-scope"],
      [c.kvStateAgentDc, "--kv-state-agent-dc"],
      [c.kvStateEndpoint, "--kv-state-endpoint"],
    ] as const) {
      if (value !== undefined) problems.push(`${flag}: needs --kv-state-agent`);
    }
  } else if (c.kvEventsTopic !== "") {
    problems.push("--kv-events-topic: not used with --kv-state-agent (each worker's raw topic is derived from its CacheOwner ids)");
  }
  if (c.kvStateAgent && c.kvEventsEncoding === "array") problems.push(ARRAY_ENCODING_WITH_STATE_AGENT);
  for (const [value, flag, width] of [
    [c.kvStateAgentCacheSemantics, "--kv-state-agent-cache-semantics", 32],
    [c.kvStateAgentRoutingScope, "--kv-state-agent-routing-scope", 32],
    [c.kvStateAgentDc, "--kv-state-agent-dc", 16],
  ] as const) {
    if (value !== undefined && !HEX(width).test(value)) problems.push(`${flag}: got ${JSON.stringify(value)}, expected ${width} lowercase hex digits`);
  }
  return problems;
}
