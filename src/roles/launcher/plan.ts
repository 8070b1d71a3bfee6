// The launcher's plan: from `up`'s resolved config and the ports it chose, the exact
// processes to start, in order, each with its command line, ports, URL and readiness gate. Pure:
// no I/O, so the whole stack shape is tested without starting anything.
import { dynamoRuntimeOptions } from "../../config/dynamo-runtime.ts";
import { agentOptions } from "../../config/agent.ts";
import { discoveryOptions } from "../../config/discovery.ts";
import { frontendFailureOptions, frontendOptions, requestLimitOptions } from "../../config/frontend.ts";
import { disaggregationOptions, type DisaggregationMode } from "../../config/disaggregation.ts";
import { conditionalDisaggOptions } from "../../config/conditional-disagg.ts";
import { mockerSideOf } from "../../config/pd-layout.ts";
import { stateAgentOptions, mockerOptions, mockerProblems, workerApiPorts, type MockerConfig } from "../../config/mocker.ts";
import type { ConfigOf, OptionTable } from "../../config/options.ts";
import { engineOptions } from "../../config/engine.ts";
import { loraFlagsFor } from "./lora-plan.ts";
import { routerTuningOptions } from "../../config/router.ts";
import { join } from "node:path";
import { DEFAULT_NAMESPACE, globalWorkers, parseRoles, ROLES, type UpConfig } from "../../config/up.ts";
import { toArgv } from "../../config/to-argv.ts";
import { ConfigError } from "../../lib/errors.ts";
import { placeholdersIn, renderCommand, shellQuote, type TemplateRole } from "./template.ts";
import { dynamoMockerArgs } from "./dynamo-mocker-args.ts";
import { workerApiPortsOf, workerApiWanted, workerUrlProblems, workerUrlValues } from "./worker-urls.ts";

export const STAGES = { agent: 0, mockers: 1, frontend: 2 } as const;

export type Readiness =
  /** GET url answers 200. */
  | { kind: "ok"; url: string }
  /** The frontend: /v1/models lists the model and /health counts at least `workers` workers. */
  | { kind: "frontend"; modelsUrl: string; healthUrl: string; model: string; workers: number };

export interface ProcessSpec {
  /** `agent`, `mocker-0`, `frontend`: the output prefix, log file name and what errors name. */
  name: string;
  role: TemplateRole | "nats";
  stage: (typeof STAGES)[keyof typeof STAGES];
  argv: string[];
  /** Run from `--<role>-cmd` instead of this executable. */
  external: boolean;
  /** Base URL of its HTTP API. */
  url: string;
  ports: Record<string, number | number[]>;
  readiness: Readiness;
  /**
   * What `up`'s liveness watch GETs once the process is up: `/live` of a kvcr-mock role; for a
   * `--<role>-cmd`, the route its readiness gate already requires (the agent's /live, a mocker's
   * or frontend's /health). Any answer counts as alive.
   */
  livenessUrl: string;
  /** Seconds the readiness gate may take. */
  readyTimeoutS: number;
  /** Variables set for this child beside up's own environment (a Dynamo role's DYN_*). */
  env?: Record<string, string>;
}

/** Ports `up` chose before planning (explicit ones, or free ones it picked for 0). */
export interface ChosenPorts {
  agent: number;
  frontend: number;
  /** Every frontend replica's HTTP port (--frontends), the first being `frontend` (default: just it). */
  frontends?: number[];
  /** HTTP port per mocker process. */
  mockers: number[];
  /** The nats-server up starts for --router-replica-sync (no --nats-url). */
  nats?: { client: number; monitor: number };
  /** With the worker API: global worker k's API port (kept across its mocker's restarts). */
  workerApi?: number[];
  /** The {metrics_port} of --frontend-cmd. */
  frontendMetrics?: number;
  /** Per mocker process: a prefill process's KV transfer port (0 or absent elsewhere). */
  kvTransfer?: number[];
  /** The first raw KV-event port up picked for a router that subscribes to them (global rank k on it + k). */
  rawBase?: number;
}

export interface PlanContext {
  /** How to run this executable: [binary] when compiled, [bun, cli.ts] from source. */
  self: readonly string[];
  ports: ChosenPorts;
  /** The discovery directory every child is told (resolved, so all agree). */
  discoveryDir: string;
  /** The NATS server the frontends sync over (--router-replica-sync): --nats-url, or the one up starts. */
  natsUrl?: string;
  /** --runtime dynamo: the Python that runs Dynamo's roles and the model directory the cards name. */
  dynamo?: { peersPython: string; modelPath: string; tmpDir: string };
  /** The {peers_python} of a role command outside --runtime dynamo (a router from the peers environment). */
  peersPython?: string;
}

/** Dynamo's own state agent and frontend, as up starts them under --runtime dynamo without --agent-cmd / --frontend-cmd. */
export const DYNAMO_AGENT_CMD = "{peers_python} -m dynamo.kv_state_agent --max-slots {max_slots}";
export const DYNAMO_FRONTEND_CMD =
  "{peers_python} -m dynamo.frontend --http-host {host} --http-port {port} --namespace {namespace} --router-mode {router_mode} --discovery-backend {discovery_backend} --request-plane tcp --event-plane zmq";

/**
 * What every role of a Dynamo stack is told through its environment: the namespace, the discovery
 * backend and directory, the TCP request plane and ZeroMQ event plane advertised on the stack's
 * host, and no Hugging Face hub.
 */
export function dynamoEnvironment(config: UpConfig, ctx: Pick<PlanContext, "discoveryDir">, tmpDir: string): Record<string, string> {
  const host = dialHost(config.host).replace(/^\[|\]$/g, "");
  return {
    DYN_NAMESPACE: config.namespace ?? DEFAULT_NAMESPACE,
    DYN_DISCOVERY_BACKEND: config.discoveryBackend,
    ...(config.discoveryBackend === "etcd" ? { ETCD_ENDPOINTS: config.etcdEndpoints ?? "http://localhost:2379" } : { DYN_FILE_KV: ctx.discoveryDir }),
    DYN_REQUEST_PLANE: "tcp",
    DYN_EVENT_PLANE: "zmq",
    DYN_TCP_RPC_HOST: host,
    DYN_EVENT_PLANE_HOST: host,
    DYN_TCP_RESPONSE_STREAM_HOST: host,
    HF_HUB_OFFLINE: "1",
    TRANSFORMERS_OFFLINE: "1",
    TMPDIR: tmpDir,
  };
}

export interface StackPlan {
  processes: ProcessSpec[];
  /** Mockers without a local agent in state-agent mode wait for the agent's record in discovery. */
  awaitAgentRecord: boolean;
  agentUrl: string | undefined;
  frontendUrl: string | undefined;
  /** Every frontend replica's URL, the first being frontendUrl. */
  frontendUrls: string[];
}

/** The address to dial a socket bound on `host` (a wildcard bind is reached on loopback). */
export function dialHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

export function plan(config: UpConfig, ctx: PlanContext): StackPlan {
  const { roles } = parseRoles(config.roles);
  const stateAgent = config.kvStateAgent;
  const host = dialHost(config.host);
  const agentUrl = stateAgent ? `http://${host}:${ctx.ports.agent}` : undefined;
  const frontendUrl = `http://${host}:${ctx.ports.frontend}`;
  const totalWorkers = globalWorkers(config);
  const common: Record<string, string> = {
    kvcr_mock: ctx.self.map(shellQuote).join(" "),
    host: config.host,
    namespace: config.namespace ?? DEFAULT_NAMESPACE,
    discovery_backend: config.discoveryBackend,
    discovery_dir: ctx.discoveryDir,
    model: config.modelName,
    block_size: String(config.blockSize),
    mode: stateAgent ? "state_agent" : "direct",
    agent_port: stateAgent ? String(ctx.ports.agent) : "",
    agent_url: agentUrl ?? "",
    frontend_port: String(ctx.ports.frontend),
    frontend_url: frontendUrl,
    log_level: config.logLevel,
    peers_python: ctx.dynamo?.peersPython ?? ctx.peersPython ?? "",
  };
  const dynamo = config.runtime === "dynamo" ? ctx.dynamo : undefined;
  if (config.runtime === "dynamo" && dynamo === undefined) throw new ConfigError(["--runtime dynamo: no Python for Dynamo's roles (--peers-python)"]);
  const dynEnv = dynamo ? dynamoEnvironment(config, ctx, dynamo.tmpDir) : undefined;
  const logFlags = [
    ...(config.logLevel !== "info" ? [`--log-level=${config.logLevel}`] : []),
    ...(config.logFormat !== "pretty" ? [`--log-format=${config.logFormat}`] : []),
  ];
  const discovery = discoverySettings(config, ctx);
  const processes: ProcessSpec[] = [];
  const workerApi = workerApiWanted(config);
  const urlProblems = workerUrlProblems(config);
  if (urlProblems.length > 0) throw new ConfigError(urlProblems);

  if (stateAgent && roles.has("agent")) {
    const maxSlots = config.maxSlots ?? Math.max(8, roles.has("mockers") ? totalWorkers * config.dataParallelSize : 0);
    const own = [...ctx.self, "agent", ...toArgv(agentOptions, { port: ctx.ports.agent, maxSlots, maxEventPayloadBytes: config.maxEventPayloadBytes, ...discovery }), ...logFlags];
    const agentCmd = config.agentCmd ?? (dynamo ? DYNAMO_AGENT_CMD : undefined);
    processes.push({
      name: "agent",
      role: "agent",
      stage: STAGES.agent,
      argv: agentCmd ? renderCommand(agentCmd, { ...common, port: String(ctx.ports.agent), max_slots: String(maxSlots) }, "--agent-cmd", "agent") : own,
      external: agentCmd !== undefined,
      url: agentUrl!,
      ports: { http: ctx.ports.agent },
      readiness: { kind: "ok", url: `${agentUrl}/live` },
      livenessUrl: `${agentUrl}/live`,
      readyTimeoutS: config.agentReadyTimeout,
      // Dynamo's agent serves /live on DYN_SYSTEM_PORT.
      ...(dynEnv ? { env: { ...dynEnv, DYN_SYSTEM_PORT: String(ctx.ports.agent) } } : {}),
    });
  }

  if (roles.has("mockers")) {
    for (let i = 0; i < config.mockerProcesses; i++) {
      const mocker = dynamo ? dynamoMockerConfig(mockerConfigFor(config, i, ctx), dynamo.modelPath) : mockerConfigFor(config, i, ctx);
      const problems = mockerProblems(mocker);
      if (problems.length > 0) throw new ConfigError(problems.map((p) => `mocker-${i}: ${p}`));
      const url = `http://${host}:${ctx.ports.mockers[i]}`;
      const engineArgs = config.mockerCmd !== undefined && placeholdersIn(config.mockerCmd).has("engine_args") ? dynamoMockerArgs(mocker) : undefined;
      if (engineArgs && engineArgs.problems.length > 0) throw new ConfigError(engineArgs.problems.map((p) => `--mocker-cmd: ${p}`));
      const values = {
        ...common,
        port: String(ctx.ports.mockers[i]),
        index: String(i),
        workers: String(config.workersPerProcess),
        first_worker: String(i * config.workersPerProcess),
        dp: String(config.dataParallelSize),
        zmq_kv_events_ports: mocker.zmqKvEventsPorts?.join(",") ?? "",
        zmq_replay_ports: mocker.zmqReplayPorts?.join(",") ?? "",
        cache_slot: String(mocker.kvStateAgentCacheSlot ?? ""),
        raw_host: mocker.kvStateAgentRawHost ?? "",
        model_path: mocker.modelPath ?? "",
        engine_args: engineArgs?.argv ?? [],
      };
      processes.push({
        name: `mocker-${i}`,
        role: "mocker",
        stage: STAGES.mockers,
        argv: config.mockerCmd ? renderCommand(config.mockerCmd, values, "--mocker-cmd", "mocker") : [...ctx.self, "mocker", ...toArgv(mockerOptions, mocker), ...logFlags],
        external: config.mockerCmd !== undefined,
        url,
        ports: {
          http: ctx.ports.mockers[i]!,
          ...(mocker.zmqKvEventsPorts ? { zmqKvEvents: mocker.zmqKvEventsPorts } : {}),
          ...(mocker.zmqReplayPorts ? { zmqReplay: mocker.zmqReplayPorts } : {}),
          ...(workerApi ? { openai: workerApiPorts(mocker)! } : {}),
        },
        readiness: { kind: "ok", url: `${url}/health` },
        livenessUrl: `${url}${config.mockerCmd ? "/health" : "/live"}`,
        readyTimeoutS: config.readyTimeout,
        // A Dynamo-runtime mocker serves /live and /health on DYN_SYSTEM_PORT, as Dynamo's workers do;
        // Dynamo's own mocker reports ready there only once its generate endpoint is (else never).
        ...(dynEnv ? { env: { ...dynEnv, DYN_SYSTEM_PORT: String(ctx.ports.mockers[i]), ...(config.mockerCmd ? { DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS: '["generate"]', DYN_SYSTEM_HOST: dynEnv.DYN_TCP_RPC_HOST! } : {}) } } : {}),
      });
    }
  }

  const frontendPorts = ctx.ports.frontends ?? [ctx.ports.frontend];
  if (roles.has("frontend")) {
    const router = Object.fromEntries(Object.keys(routerTuningOptions).map((k) => [k, config[k as keyof typeof routerTuningOptions]]));
    const failures = { ...pick(config, frontendFailureOptions), ...pick(config, conditionalDisaggOptions) };
    const sync = config.routerReplicaSync ? { routerReplicaSync: true, natsUrl: ctx.natsUrl ?? config.natsUrl, routerReplicaTimeout: config.routerReplicaTimeout } : {};
    // Replica i is named frontend (the first) or frontend-i, on its own port.
    frontendPorts.forEach((port, i) => {
      const url = `http://${host}:${port}`;
      const frontend = { httpPort: port, strictHealth: config.strictHealth, tokenizer: config.tokenizer, routerMode: config.routerMode, kvCacheBlockSize: config.blockSize, ...router, ...failures, ...sync, ...discovery };
      const own = [...ctx.self, "frontend", ...toArgv(frontendOptions, frontend), ...logFlags];
      const apiUrls = (ctx.ports.workerApi ?? []).map((p) => `http://${host}:${p}`);
      // Global worker k is in process floor(k / W), whose side is its process's.
      const side = (k: number) => mockerSideOf(config, Math.floor(k / config.workersPerProcess));
      const values = {
        ...common,
        port: String(port),
        router_mode: config.routerMode,
        workers: String(totalWorkers),
        ...workerUrlValues(config, ctx.ports, host),
        metrics_port: String(ctx.ports.frontendMetrics ?? ""),
      };
      const frontendCmd = config.frontendCmd ?? (dynamo ? DYNAMO_FRONTEND_CMD : undefined);
      processes.push({
        name: i === 0 ? "frontend" : `frontend-${i}`,
        role: "frontend",
        stage: STAGES.frontend,
        argv: frontendCmd ? renderCommand(frontendCmd, values, "--frontend-cmd", "frontend") : own,
        external: frontendCmd !== undefined,
        ...(dynEnv ? { env: dynEnv } : {}),
        url,
        // The metrics port up picked for a router's own listener, there to be scraped.
        ports: { http: port, ...(frontendCmd && ctx.ports.frontendMetrics ? { metrics: ctx.ports.frontendMetrics } : {}) },
        // Without local mockers the workers join from other hosts, maybe later: the frontend is ready when it serves.
        readiness: roles.has("mockers")
          ? { kind: "frontend", modelsUrl: `${url}/v1/models`, healthUrl: `${url}/health`, model: config.modelName, workers: totalWorkers }
          : { kind: "ok", url: `${url}/live` },
        livenessUrl: `${url}${frontendCmd ? "/health" : "/live"}`,
        readyTimeoutS: config.readyTimeout,
      });
    });
  }

  return {
    processes,
    // A Dynamo-runtime mocker waits for Dynamo's host advertisement itself.
    awaitAgentRecord: stateAgent && roles.has("mockers") && !roles.has("agent") && !dynamo,
    agentUrl: stateAgent && roles.has("agent") ? agentUrl : undefined,
    frontendUrl: roles.has("frontend") ? frontendUrl : undefined,
    frontendUrls: roles.has("frontend") ? frontendPorts.map((port) => `http://${host}:${port}`) : [],
  };
}

/** Mocker process `i`'s config: its workers' port and cache-slot ranges (the layout of docs/up.md). */
export function mockerConfigFor(config: UpConfig, i: number, ctx: Pick<PlanContext, "ports" | "discoveryDir">): MockerConfig {
  const W = config.workersPerProcess;
  const dp = config.dataParallelSize;
  const first = i * W;
  const bases = (base: number | undefined) => (base === undefined ? undefined : Array.from({ length: W }, (_, j) => (base === 0 ? 0 : base + (first + j) * dp)));
  const stateAgent = config.kvStateAgent;
  return {
    // Every engine and state-agent option passes through as up resolved it (so options added later do too);
    // what differs per process is set below.
    ...pick(config, engineOptions),
    ...pick(config, stateAgentOptions),
    modelName: config.modelName,
    maxModelLen: config.maxModelLen,
    numWorkers: W,
    dataParallelSize: dp,
    // Raw PUBs are always on in `up` (picked ports without a base), so the stack's raw streams can be tapped.
    zmqKvEventsPorts: bases(config.zmqKvEventsPorts ?? ctx.ports.rawBase ?? 0),
    zmqReplayPorts: bases(config.zmqReplayPorts),
    extraEngineArgs: undefined,
    ...loraFlagsFor(config, first, W, globalWorkers(config)),
    staggerDelay: config.staggerDelay,
    httpPort: ctx.ports.mockers[i]!,
    admin: true, // up's mockers always serve the fault API (bench and up schedules post to it)
    // The worker API: each process serves its workers' APIs from the global base, or on the free ports up picked.
    openaiPortBase: workerApiWanted(config) && config.openaiPortBase ? config.openaiPortBase + first : undefined,
    openaiPorts: workerApiWanted(config) && !config.openaiPortBase ? workerApiPortsOf(ctx.ports, first, W) : undefined,
    getLoadFormat: config.getLoadFormat,
    ...defaultsOf(requestLimitOptions),
    // Aggregated, or with --prefill-workers / --decode-workers the first processes prefill, the rest decode.
    ...defaultsOf(disaggregationOptions),
    ...defaultsOf(dynamoRuntimeOptions),
    disaggregationMode: mockerSideOf(config, i),
    // A prefill process's transfer port, picked by up: a router's command names it, and a restart keeps it.
    ...(ctx.ports.kvTransfer?.[i] ? { kvTransferPort: ctx.ports.kvTransfer[i] } : {}),
    kvStateAgent: stateAgent,
    kvStateAgentRawHost: stateAgent ? config.kvStateAgentRawHost : undefined,
    kvStateAgentCacheSlot: stateAgent ? config.cacheSlotBase + first * dp : undefined,
    ...discoverySettings(config, ctx),
  };
}

/** A mocker process's config under --runtime dynamo: Dynamo's surfaces instead of kvcr-mock's own. */
function dynamoMockerConfig(m: MockerConfig, modelPath: string): MockerConfig {
  return {
    ...m,
    runtime: "dynamo",
    modelPath,
    admin: false,
    openaiPortBase: undefined,
    // Raw streams only for Dynamo's state agent to attach; direct mode publishes on Dynamo's event plane.
    zmqKvEventsPorts: m.kvStateAgent ? m.zmqKvEventsPorts : undefined,
    zmqReplayPorts: m.kvStateAgent ? m.zmqReplayPorts : undefined,
  };
}

/** An option table's defaults (options `up` does not take, handed on as each role defaults them). */
function defaultsOf<T extends OptionTable>(table: T): ConfigOf<T> {
  return Object.fromEntries(Object.entries(table).map(([k, spec]) => [k, spec.default])) as ConfigOf<T>;
}

/** `config`'s values for the keys of an option table. */
function pick<T extends OptionTable>(config: UpConfig, table: T): ConfigOf<T> {
  return Object.fromEntries(Object.keys(table).map((k) => [k, (config as Record<string, unknown>)[k]])) as ConfigOf<T>;
}

/** The discovery options every child gets: up's, with the file backend's directory resolved. */
function discoverySettings(config: UpConfig, ctx: Pick<PlanContext, "discoveryDir">): ConfigOf<typeof discoveryOptions> {
  const out = Object.fromEntries(Object.keys(discoveryOptions).map((k) => [k, config[k as keyof typeof discoveryOptions]])) as ConfigOf<typeof discoveryOptions>;
  out.namespace = config.namespace ?? DEFAULT_NAMESPACE;
  if (config.discoveryBackend === "file") out.discoveryDir = ctx.discoveryDir;
  return out;
}

/** Where a stack's records live: its discovery namespace and (file backend) directory. */
export interface StackDiscovery {
  namespace: string;
  discoveryDir: string;
  /** The namespace was derived for this stack alone (not given, not the shared default). */
  own: boolean;
}

/**
 * A whole stack on the file backend (all three roles, one host) with no namespace given runs in
 * a namespace of its own, `dynamo-<frontend port>` (the port it bound, so two stacks of one host
 * never share it), under `<discovery dir>/<namespace>` unless --discovery-dir is given (then that
 * directory as given). A given namespace, etcd or a partial --roles (a stack spanning hosts, joined
 * on purpose) keep the shared default `dynamo` in the discovery directory itself, like roles
 * started by hand.
 */
export function stackDiscovery(config: UpConfig, frontendPort: number, defaultDir: string): StackDiscovery {
  const { roles } = parseRoles(config.roles);
  const whole = config.discoveryBackend === "file" && ROLES.every((r) => roles.has(r));
  if (!whole || config.namespace !== undefined) return { namespace: config.namespace ?? DEFAULT_NAMESPACE, discoveryDir: config.discoveryDir ?? defaultDir, own: false };
  const namespace = `${DEFAULT_NAMESPACE}-${frontendPort}`;
  return { namespace, discoveryDir: config.discoveryDir ?? join(defaultDir, namespace), own: true };
}
