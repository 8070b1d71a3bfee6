// `kvcr-mock up` options: the stack's shape, supervision and external commands, plus
// the role flags it hands on (engine and state-agent flags to every mocker, router flags to the
// frontend, --max-slots to the agent). The stack config file is sectioned (STACK_SECTIONS).
import { rawHostProblem } from "../protocol/cache-owner.ts";
import { GET_LOAD_FORMATS } from "../protocol/sglang.ts";
import { discoveryOptions, discoveryProblems } from "./discovery.ts";
import { engineOptions, engineProblems } from "./engine.ts";
import { parseLoraModules } from "./lora-modules.ts";
import { agentOptions } from "./agent.ts";
import { frontendFailureOptions, frontendOptions } from "./frontend.ts";
import type { ConfigSections, Overlay } from "./load.ts";
import { ARRAY_ENCODING_WITH_STATE_AGENT, maxModelLenOption, stateAgentOptions } from "./mocker.ts";
import { commonOptions } from "./common.ts";
import { loadConfig } from "./load.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";
import { LIVE_ROUTER_MODES, REPLAY_ONLY_ROUTER_MODES, routerModesHelp } from "../protocol/router-modes.ts";
import { routerTuningOptions } from "./router.ts";
import { timingProfileOverlay } from "./timing-profile.ts";
import { replicaSyncOptions, replicaSyncProblems } from "./replica-sync.ts";
import { conditionalDisaggOptions, conditionalDisaggProblems } from "./conditional-disagg.ts";
import { pdLayoutOptions, pdLayoutOverlay } from "./pd-layout.ts";

export const ROLES = ["agent", "mockers", "frontend"] as const;
export const RESTART_POLICIES = ["on-failure", "no"] as const;
export type StackRole = (typeof ROLES)[number];

// The mode is a stack setting (default on in `up`); slots come from --cache-slot-base.
const { kvStateAgentCacheSlot: _slot, kvStateAgent: _mode, ...stateAgentPassOn } = stateAgentOptions;

export const stackOptions = defineOptions({
  ...group("Stack", {
    roles: { kind: "string", default: ROLES.join(","), description: "Which roles this up runs (comma-separated agent, mockers, frontend), so one stack spans hosts" },
    modelName: { kind: "string", nonEmpty: true, default: "mock-model", description: "Model name every worker serves" },
    kvStateAgent: { kind: "bool", default: true, description: "State-agent mode (the agent ingests raw streams); --no-kv-state-agent = direct mode" },
    mockerProcesses: { kind: "int", min: 1, max: 1024, default: 1, description: "Mocker processes" },
    frontends: { kind: "int", min: 1, max: 64, default: 1, description: "Frontend replicas, on consecutive ports from --http-port (picked ports with 0); with --router-replica-sync they route as one" },
    natsServer: { kind: "string", nonEmpty: true, description: "The nats-server executable up starts for --router-replica-sync without --nats-url (default: nats-server on PATH, or in /usr/sbin as Debian installs it)" },
    numWorkers: { kind: "int", min: 1, max: 100_000_000, description: "Workers in the whole stack, spread evenly over --mocker-processes (default: --mocker-processes × --workers-per-process)" },
    workersPerProcess: { kind: "int", min: 1, max: 100_000, default: 2, description: "Workers in each mocker process (--num-workers gives the total instead)" },
    cacheSlotBase: { kind: "int", min: 0, default: 0, description: "First CacheOwner ordinal; global worker k rank r owns base + k × dp + r" },
    ...pdLayoutOptions,
    demo: { kind: "bool", default: false, description: "Once ready, send the same chat request twice through the frontend (the second hits the KV cache), print both, stop" },
  }),
  ...group("Supervision", {
    agentReadyTimeout: { kind: "number", min: 0.001, default: 60, description: "Seconds to wait for the agent's /live (or, mockers-only, its discovery record)" },
    readyTimeout: { kind: "number", min: 0.001, default: 60, description: "Seconds to wait for each mocker's /health and the frontend's /v1/models and /health" },
    gracePeriod: { kind: "number", min: 0, default: 10, description: "Seconds between SIGTERM and SIGKILL when stopping children" },
    agentCmd: { kind: "string", nonEmpty: true, description: "Run this command as the agent (placeholders: docs/cli.md)" },
    mockerCmd: { kind: "string", nonEmpty: true, description: "Run this command as each mocker process (placeholders: docs/cli.md)" },
    frontendCmd: { kind: "string", nonEmpty: true, description: "Run this command as the frontend (placeholders: docs/cli.md)" },
    stateFile: { kind: "string", nonEmpty: true, description: "Write the ready stack's pids, ports and URLs here as JSON" },
    prometheusConfig: { kind: "string", nonEmpty: true, description: "Once ready, write a Prometheus scrape config for the stack's /metrics (agent, each mocker process, frontend, at their actual ports) to FILE" },
    logDir: { kind: "string", nonEmpty: true, description: "Also write each child's output to DIR/<name>.log" },
    restart: { kind: "enum", choices: RESTART_POLICIES, default: "on-failure", description: "on-failure: restart a child that exits after the stack is ready (backoff, readiness gate); no: any child exit stops the stack" },
    maxRestarts: { kind: "int", min: 0, max: 1_000_000, default: 5, description: "Restarts of one child within 10 minutes before the stack stops (with --restart on-failure)" },
    restartBackoff: { kind: "number", min: 0, max: 3600, default: 1, description: "Seconds before a child's first restart; doubled per restart up to 30 s, reset once it has stayed up 60 s" },
    livenessTimeout: {
      kind: "number",
      min: 0,
      max: 3600,
      default: 5,
      description: "Seconds a ready child may leave its liveness probe (GET /live about once a second) unanswered before up SIGKILLs it; its exit is then handled as any other (--restart); 0 = off",
    },
  }),
  ...group("Faults and audit", {
    faults: { kind: "string", nonEmpty: true, description: "Apply this fault schedule (YAML or JSON list of {at, target, fault}) to the stack, `at` counted from ready" },
    audit: { kind: "bool", default: false, description: "Compare the frontend's index with the mockers' truth every --audit-interval and log the stack-wide worst precision / recall" },
    auditInterval: { kind: "number", min: 0.05, max: 3600, default: 1, description: "Seconds between audit samples (with --audit)" },
  }),
});

export const agentPassOn = defineOptions({
  ...group("HTTP and ports", {
    agentPort: { kind: "int", min: 0, max: 65535, default: 9091, description: "Agent HTTP port (/live, /health, /v1/slots); 0 = pick" },
  }),
  ...group("Stack", {
    maxSlots: { kind: "int", min: 1, description: "The agent's slot cap, one slot per CacheOwner (default: 8, or one per CacheOwner of this stack if more)" },
    maxEventPayloadBytes: agentOptions.maxEventPayloadBytes,
  }),
});

export const frontendPassOn = defineOptions({
  ...group("HTTP and ports", {
    httpPort: { kind: "int", min: 0, max: 65535, default: 8000, description: "Frontend OpenAI HTTP port; 0 = pick" },
    strictHealth: frontendOptions.strictHealth,
    tokenizer: frontendOptions.tokenizer,
  }),
  ...group("Router", {
    routerMode: { kind: "enum", choices: LIVE_ROUTER_MODES, refused: REPLAY_ONLY_ROUTER_MODES, default: "kv", description: `How the frontend picks each request's (worker, rank): ${routerModesHelp(LIVE_ROUTER_MODES)} (kv by default in up)` },
    ...routerTuningOptions,
  }),
  ...conditionalDisaggOptions,
  ...frontendFailureOptions,
  ...replicaSyncOptions,
  natsUrl: { ...replicaSyncOptions.natsUrl, description: "NATS server(s) the frontends sync over (default: up starts a nats-server of its own on a free port)" },
});

export const mockerPassOn = defineOptions({
  ...engineOptions,
  numHostBlocks: { ...engineOptions.numHostBlocks, default: 4096 },
  ...maxModelLenOption,
  ...stateAgentPassOn,
  kvStateAgentRawHost: { ...stateAgentOptions.kvStateAgentRawHost, default: "127.0.0.1" },
  ...group("HTTP and ports", {
    zmqKvEventsPorts: { kind: "int", min: 0, max: 65535, description: "Raw KV-event base port: global worker k rank r publishes on B + k × dp + r (default: picked)" },
    zmqReplayPorts: { kind: "int", min: 0, max: 65535, description: "Replay base port, same layout; 0 = each mocker picks (default: no replay sockets)" },
  }),
  ...group("Supervision", {
    staggerDelay: { kind: "number", min: 0, default: 0, description: "Seconds between starting consecutive workers of a process" },
  }),
  ...group("Dynamo runtime", {
    runtime: {
      kind: "enum",
      choices: ["kvcr", "dynamo"],
      default: "kvcr",
      description: "Whose deployment the mockers join: kvcr (kvcr-mock's agent and frontend) or dynamo (`mocker --runtime dynamo`, with Dynamo's own state agent and frontend from --agent-cmd / --frontend-cmd, by default run with --peers-python)",
    },
    modelPath: { kind: "string", nonEmpty: true, description: "With --runtime dynamo: the model directory the cards name (default: up writes one, as `kvcr-mock model-files` does)" },
    peersPython: { kind: "string", nonEmpty: true, description: "With --runtime dynamo: the Python that runs Dynamo's roles, the {peers_python} of --agent-cmd / --frontend-cmd (default: KVCR_PEERS_PYTHON, else the peers environment)" },
  }),
  ...group("LoRA adapters", {
    loraModules: { kind: "string", nonEmpty: true, variadic: true, description: "LoRA adapters the mockers load at start: name=path … or vLLM's JSON form (see mocker --lora-modules); on every worker unless --lora-replicas" },
    loraReplicas: { kind: "int", min: 1, max: 100_000, description: "With --lora-modules: load each adapter on this many of the stack's workers (of each pool's with --prefill-workers/--decode-workers), placed by rendezvous hashing (Dynamo's default placement)" },
  }),
  ...group("Worker API", {
    workerApi: { kind: "bool", default: false, description: "Every worker also serves vLLM's OpenAI API on a port of its own (listed in the ready summary and the state file), for routers other than the frontend" },
    openaiPortBase: { kind: "int", min: 0, max: 65535, description: "With --worker-api: global worker k serves on P + k (default: up picks free ports, kept when a mocker restarts)" },
    getLoadFormat: {
      kind: "enum",
      choices: GET_LOAD_FORMATS,
      default: "array",
      description: "With --worker-api: shape of each worker's GET /get_load: array (SGLang's, read by sglang-router) or object ({\"load\": N}, read by vllm-router)",
    },
  }),
});

/** The namespace every role defaults to; `up` defaults to its own (stackDiscovery in roles/launcher/plan.ts). */
export const DEFAULT_NAMESPACE = discoveryOptions.namespace.default;

// No default in `up`: unset, a whole stack on the file backend derives a namespace of its own.
const { default: _sharedNamespace, ...upNamespace } = discoveryOptions.namespace;

export const upOptions = defineOptions({
  ...stackOptions,
  ...agentPassOn,
  ...frontendPassOn,
  ...mockerPassOn,
  ...discoveryOptions,
  namespace: {
    ...upNamespace,
    description: `Discovery namespace scoping every record (default: ${DEFAULT_NAMESPACE}-<frontend port>, in its own discovery subdirectory, for a whole stack on the file backend; else ${DEFAULT_NAMESPACE})`,
  },
});

export type UpConfig = ConfigOf<typeof upOptions & typeof commonOptions>;

const keysOf = (t: object) => Object.keys(t) as (keyof typeof upOptions)[];
/** The stack file's sections: `stack` (shape, supervision, discovery, logs) and one per role. */
export const STACK_SECTIONS: ConfigSections<typeof upOptions & typeof commonOptions> = {
  stack: [...keysOf(stackOptions), ...keysOf(discoveryOptions), "logLevel", "logFormat"],
  agent: keysOf(agentPassOn),
  mockers: keysOf(mockerPassOn),
  frontend: keysOf(frontendPassOn),
};

export function parseRoles(text: string): { roles: Set<StackRole>; problems: string[] } {
  const names = text.split(",").map((r) => r.trim()).filter(Boolean);
  const bad = names.filter((n) => !(ROLES as readonly string[]).includes(n));
  const problems = bad.length > 0 || names.length === 0 ? [`--roles: got ${JSON.stringify(text)}, expected a comma-separated list of ${ROLES.join(", ")}`] : [];
  return { roles: new Set(names.filter((n): n is StackRole => !bad.includes(n))), problems };
}

export function globalWorkers(c: Pick<UpConfig, "mockerProcesses" | "workersPerProcess">): number {
  return c.mockerProcesses * c.workersPerProcess;
}

/** Cross-field rules of the up options, on the resolved config. */
export function upProblems(c: UpConfig): string[] {
  const roles = parseRoles(c.roles);
  const problems = [...engineProblems(c), ...discoveryProblems(c), ...conditionalDisaggProblems(c), ...roles.problems];
  if (c.loraModules !== undefined) {
    const modules = parseLoraModules(c.loraModules, c.modelName);
    if (typeof modules === "string") problems.push(modules);
  } else if (c.loraReplicas !== undefined) problems.push("--lora-replicas: needs --lora-modules (the adapters it places)");
  const ranks = globalWorkers(c) * c.dataParallelSize;
  for (const [base, flag] of [[c.zmqKvEventsPorts, "--zmq-kv-events-ports"], [c.zmqReplayPorts, "--zmq-replay-ports"]] as const) {
    if (base !== undefined && base !== 0 && base + ranks - 1 > 65535) problems.push(`${flag}: base ${base} + ${ranks} ranks of this stack exceeds port 65535`);
  }
  if (c.openaiPortBase !== undefined) {
    const workers = globalWorkers(c);
    if (!c.workerApi) problems.push("--openai-port-base: needs --worker-api");
    else if (c.openaiPortBase !== 0 && c.openaiPortBase + workers - 1 > 65535) problems.push(`--openai-port-base: base ${c.openaiPortBase} + ${workers} workers of this stack exceeds port 65535`);
    for (const [base, flag, n] of [[c.zmqKvEventsPorts, "--zmq-kv-events-ports", ranks], [c.zmqReplayPorts, "--zmq-replay-ports", ranks]] as const) {
      const b = c.openaiPortBase;
      if (b && base && b < base + n && base < b + workers) problems.push(`--openai-port-base: range ${b}–${b + workers - 1} overlaps ${flag} ${base}–${base + n - 1}`);
    }
  }
  if (c.zmqKvEventsPorts && c.zmqReplayPorts) {
    const [a, b] = [c.zmqKvEventsPorts, c.zmqReplayPorts];
    if (a < b + ranks && b < a + ranks) problems.push(`--zmq-replay-ports: range ${b}–${b + ranks - 1} overlaps --zmq-kv-events-ports ${a}–${a + ranks - 1}`);
  }
  if (c.kvStateAgent) {
    const reason = rawHostProblem(c.kvStateAgentRawHost);
    if (reason) problems.push(`--kv-state-agent-raw-host: got ${JSON.stringify(c.kvStateAgentRawHost)}, ${reason}`);
    if (c.kvEventsTopic !== "") problems.push("--kv-events-topic: not used with --kv-state-agent (each worker's raw topic is derived from its CacheOwner ids)");
    if (c.numHostBlocks === 0) problems.push("--num-host-blocks: state-agent mode reports a host tier (G2), give a count > 0 (or --no-kv-state-agent)");
    // Checked here too, so `up` fails at once rather than through its mockers.
    if (c.kvEventsEncoding === "array") problems.push(ARRAY_ENCODING_WITH_STATE_AGENT);
  }
  problems.push(...frontendReplicaProblems(c));
  if (c.runtime === "dynamo") {
    // What a Dynamo deployment of this stack cannot take: refused by name, never ignored.
    const refused: [boolean, string, string][] = [
      [c.workerApi, "--worker-api", "Dynamo's workers serve its request plane, not an API of their own"],
      [c.audit, "--audit", "it reads kvcr-mock's own frontend index"],
      [c.faults !== undefined, "--faults", "the fault API is kvcr-mock's own"],
      [c.frontends > 1, "--frontends", "up runs one Dynamo frontend"],
      [c.prefillWorkers !== undefined || c.decodeWorkers !== undefined, "--prefill-workers / --decode-workers", "not laid out by up under Dynamo yet (run `mocker --runtime dynamo --disaggregation-mode` yourself)"],
    ];
    for (const [given, flag, why] of refused) if (given) problems.push(`${flag}: not with --runtime dynamo (${why})`);
  } else {
    // --peers-python is also KVCR_PEERS_PYTHON, a developer's standing pointer at a Python: not stray.
    if (c.modelPath !== undefined) problems.push("--model-path: only with --runtime dynamo");
  }
  if (c.livenessTimeout > 0 && c.livenessTimeout < 1) problems.push(`--liveness-timeout: got ${c.livenessTimeout}, expected 0 (off) or at least 1 second (a probe's own deadline is up to 1 s)`);
  if (c.audit && !roles.roles.has("frontend")) problems.push("--audit: compares the frontend's index with the mockers' truth; include frontend in --roles");
  if (c.maxSlots !== undefined && c.kvStateAgent && roles.roles.has("agent") && roles.roles.has("mockers") && c.maxSlots < ranks) {
    problems.push(`--max-slots: got ${c.maxSlots}, but this stack has ${ranks} CacheOwners (workers × dp); the agent would reject some`);
  }
  return problems;
}

/**
 * --num-workers, the stack's total (the word mocker, replay and bench use for their workers), as
 * workers per process: it must spread evenly over --mocker-processes, and agree with
 * --workers-per-process when both are given.
 */
export const upOverlay: Overlay<typeof upOptions & typeof commonOptions> = (c, problems, given) => new Map([...upWorkersOverlay(c, problems, given), ...timingProfileOverlay(c, problems, given)]);

const upWorkersOverlay: Overlay<typeof upOptions & typeof commonOptions> = (c, problems, given) => {
  if (c.prefillWorkers !== undefined || c.decodeWorkers !== undefined) return pdLayoutOverlay(c, problems, given);
  if (c.numWorkers === undefined) return new Map();
  const perProcess = c.numWorkers / c.mockerProcesses;
  if (!Number.isInteger(perProcess)) {
    problems.push(`--num-workers: ${c.numWorkers} workers do not spread evenly over --mocker-processes ${c.mockerProcesses}; give a multiple of ${c.mockerProcesses}, or --workers-per-process`);
  } else if (given.has("workersPerProcess") && c.workersPerProcess !== perProcess) {
    problems.push(`--num-workers: ${c.numWorkers} over --mocker-processes ${c.mockerProcesses} is ${perProcess} per process, but --workers-per-process is ${c.workersPerProcess}; give one of the two`);
  } else {
    return new Map([["workersPerProcess", { value: perProcess, label: "--num-workers / --mocker-processes" }]]);
  }
  return new Map();
};

/** `up`'s config from flags, validated as the command does (throws ConfigError); env defaults to none. */
export function upConfigFrom(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): UpConfig {
  return loadConfig({ ...upOptions, ...commonOptions }, { argv, env }, (c) => upProblems(c as UpConfig), { sections: STACK_SECTIONS, overlay: upOverlay }).config as UpConfig;
}

/** --frontends and router replica sync in `up`. */
function frontendReplicaProblems(c: UpConfig): string[] {
  const problems = replicaSyncProblems(c);
  if (c.frontends > 1 && c.frontendCmd !== undefined) problems.push(`--frontends: ${c.frontends} replicas run kvcr-mock's own frontend; --frontend-cmd runs one external frontend (give one or the other)`);
  if (c.httpPort !== 0 && c.httpPort + c.frontends - 1 > 65535) problems.push(`--frontends: ${c.frontends} ports from --http-port ${c.httpPort} exceed port 65535`);
  return problems;
}
