// startStack: check the given ports, pick the rest, plan, then start agent (or await its record),
// mockers and frontend stage by stage under one Supervisor, each gated on readiness, and once ready
// supervise them (restart policy, liveness watch); a failed start stops what it started. Also used
// by `bench --compare-router-modes`.
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { resolve as resolvePath } from "node:path";
import type { ScheduleTarget } from "../../config/fault-schedule.ts";
import { globalWorkers, parseRoles, upOptions, type UpConfig } from "../../config/up.ts";
import { agentOptions } from "../../config/agent.ts";
import { frontendOptions } from "../../config/frontend.ts";
import { mockerOptions } from "../../config/mocker.ts";
import type { OptionTable } from "../../config/options.ts";
import { defaultDiscoveryDir } from "../../discovery/file-store.ts";
import { openDiscoveryStore } from "../../discovery/open.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";
import { ConfigError, KvcrError, ReadinessError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import type { RoleHandle } from "../../lib/role.ts";
import { pickFreePorts, pickFreeRange, portFree } from "../../transport/port-hold.ts";
import type { ProcessControl } from "../shared/stack/fault-runner.ts";
import { mockerBase } from "../shared/stack/stack-truth.ts";
import { dialHost, plan, stackDiscovery, STAGES, type ChosenPorts, type StackPlan } from "./plan.ts";
import { usesEventSources, workerApiWanted } from "./worker-urls.ts";
import { peersPythonForCommands } from "./peers-python.ts";
import { prefillProcesses } from "../../config/pd-layout.ts";
import { placeholdersIn } from "./template.ts";
import { findNatsServer, NATS_INSTALL_HINT, natsProcessSpec, natsUrlOf } from "./nats-process.ts";
import { probeFor, probeRawSubscribed } from "./readiness.ts";
import { selfCommand } from "./self-command.ts";
import { DEFAULT_BACKOFF_MAX_MS, DEFAULT_RESTART_WINDOW_MS, DEFAULT_STABLE_MS, describeExit, Supervisor, type ChildExit, type ReadinessGate, type SupervisedChild } from "./supervisor.ts";
import { writePrometheusConfig } from "./prometheus-config.ts";
import { watchLiveness } from "./liveness.ts";
import { addWorkerEndpoints, refuseOrdinalOverlap, waitForAgentRecord, type ResolvedConfig } from "./stack-records.ts";
import { claimStateFile, StateFileWriter } from "./state-file.ts";
import { resolveDynamoRoles } from "./dynamo-roles.ts";

export interface StackDeps {
  logger: Logger;
  env?: Readonly<Record<string, string | undefined>>;
  /** How to run kvcr-mock itself (default: this executable, see selfCommand). */
  self?: readonly string[];
  /** Where prefixed child output goes (default: stderr). */
  write?: (text: string) => void;
  color?: boolean;
  /** Resolving it abandons a start-up in progress (SIGINT during start): what started is stopped. */
  cancel?: Promise<unknown>;
}

export interface StackProcess {
  name: string;
  role: string;
  pid: number;
  url: string;
  external: boolean;
  ports: Record<string, number | number[]>;
  /** Times `up` restarted it (--restart on-failure); pid is the current one's. */
  restarts: number;
  /** How many of those restarts followed a kill for not answering its liveness probe (--liveness-timeout). */
  livenessRestarts: number;
  /** Raw KV-event endpoints of a mocker's workers, per worker (from their discovery records). */
  rawEndpoints?: string[][];
  /** Their replay endpoints, when the stack has replay sockets. */
  replayEndpoints?: string[][];
  /** Each worker's own OpenAI API URL (--worker-api), by worker index in the process. */
  workerApiUrls?: string[];
}

export interface StackHandle extends RoleHandle {
  readonly plan: StackPlan;
  readonly agentUrl: string | undefined;
  readonly frontendUrl: string | undefined;
  /** Every frontend replica's URL (--frontends), the first being frontendUrl. */
  readonly frontendUrls: readonly string[];
  readonly discoveryDir: string;
  /** The discovery namespace the stack runs in (its own, derived, or the one given). */
  readonly namespace: string;
  readonly processes: readonly StackProcess[];
  /** The first child that exits unasked and is not restarted, or past --max-restarts (the stack is then broken: close it). */
  readonly failure: Promise<ChildExit>;
  /** The JSON written to --state-file. */
  state(): StackState;
  /** Kill or restart one child (fault schedules): the agent, the frontend, or the mocker at a base URL. */
  readonly control: ProcessControl;
}

export interface StackState {
  pid: number;
  namespace: string;
  discovery_dir: string;
  mode: "state_agent" | "direct";
  model: string;
  agent_url: string | null;
  frontend_url: string | null;
  /** Every frontend replica (--frontends), the first being frontend_url. */
  frontend_urls: string[];
  processes: { name: string; role: string; pid: number; url: string; external: boolean; restarts: number; liveness_restarts: number; ports: Record<string, number | number[]>; raw_endpoints?: string[][]; replay_endpoints?: string[][]; worker_api_urls?: string[] }[];
}

/** Environment variables that set an option of some kvcr-mock command besides KVCR_* (DYN_NAMESPACE, …). */
const OPTION_ALIASES = new Set(
  ([agentOptions, frontendOptions, mockerOptions, upOptions] as OptionTable[]).flatMap((t) => Object.values(t).flatMap((spec) => (spec.env ? [spec.env] : []))),
);

/**
 * The environment children inherit: up's, without the variables that configure kvcr-mock commands
 * (KVCR_*, and aliases such as DYN_NAMESPACE or DYN_HTTP_PORT). Everything up resolved reaches a
 * child as flags; a variable meant for up (KVCR_HTTP_PORT: the frontend's port) must not also set
 * a mocker's option of that name. Other variables (DYN_TOPOLOGY_*, DYN_KV_TRANSFER_DOMAIN, PATH)
 * pass through.
 */
export function childEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith("KVCR_") && !OPTION_ALIASES.has(name)));
}

/** Ports the user fixed, by who asked for them, so one in use fails before anything starts. */
function fixedPorts(config: UpConfig, roles: Set<string>): [port: number, who: string][] {
  const out: [number, string][] = [];
  if (config.kvStateAgent && roles.has("agent") && config.agentPort !== 0) out.push([config.agentPort, "agent (--agent-port)"]);
  if (roles.has("frontend") && config.httpPort !== 0) for (let i = 0; i < config.frontends; i++) out.push([config.httpPort + i, i === 0 ? "frontend (--http-port)" : `frontend-${i} (--http-port ${config.httpPort} + ${i})`]);
  if (roles.has("mockers")) {
    const ranks = globalWorkers(config) * config.dataParallelSize;
    const W = config.workersPerProcess * config.dataParallelSize;
    for (const [base, flag] of [[config.zmqKvEventsPorts, "--zmq-kv-events-ports"], [config.zmqReplayPorts, "--zmq-replay-ports"]] as const) {
      if (base) for (let k = 0; k < ranks; k++) out.push([base + k, `mocker-${Math.floor(k / W)} (${flag} ${base} + ${k})`]);
    }
    const api = workerApiWanted(config) ? config.openaiPortBase : undefined;
    if (api) for (let k = 0; k < globalWorkers(config); k++) out.push([api + k, `mocker-${Math.floor(k / config.workersPerProcess)} (--openai-port-base ${api} + ${k})`]);
  }
  return out;
}

export function choosePorts(config: UpConfig, roles: Set<string>): ChosenPorts {
  const host = config.host;
  const busy = fixedPorts(config, roles).filter(([port]) => !portFree(host, port));
  if (busy.length > 0) {
    const shown = busy.slice(0, 5).map(([port, who]) => `port ${port} for ${who} is already in use on ${host}`);
    throw new KvcrError("PORT_IN_USE", `${shown.join("; ")}${busy.length > 5 ? ` (and ${busy.length - 5} more)` : ""}: stop what holds it or choose another port (0 = pick a free one)`);
  }
  const mockers = roles.has("mockers") ? config.mockerProcesses : 0;
  const extraFrontends = roles.has("frontend") && config.httpPort === 0 ? config.frontends - 1 : 0;
  const nats = startsNats(config, roles) ? 2 : 0;
  // The workers' API ports are fixed here, not by each mocker: a router's command names them, and a restarted mocker binds them again.
  const apis = roles.has("mockers") && workerApiWanted(config) && !config.openaiPortBase ? globalWorkers(config) : 0;
  const metrics = roles.has("frontend") && config.frontendCmd !== undefined && placeholdersIn(config.frontendCmd).has("metrics_port") ? 1 : 0;
  const prefills = roles.has("mockers") ? (prefillProcesses(config) ?? 0) : 0;
  const picked = pickFreePorts(host, mockers + 2 + extraFrontends + nats + apis + metrics + prefills);
  const frontend = config.httpPort || picked[1]!;
  const more = picked.slice(2 + mockers);
  const afterNats = more.slice(extraFrontends + nats);
  const base = config.openaiPortBase;
  return {
    agent: config.agentPort || picked[0]!,
    frontend,
    frontends: [frontend, ...Array.from({ length: config.frontends - 1 }, (_, i) => (config.httpPort ? config.httpPort + i + 1 : more[i]!))],
    mockers: picked.slice(2, 2 + mockers),
    ...(nats > 0 ? { nats: { client: more[extraFrontends]!, monitor: more[extraFrontends + 1]! } } : {}),
    ...(apis > 0 ? { workerApi: afterNats.slice(0, apis) } : base && roles.has("mockers") && workerApiWanted(config) ? { workerApi: Array.from({ length: globalWorkers(config) }, (_, k) => base + k) } : {}),
    ...(metrics > 0 ? { frontendMetrics: afterNats[apis]! } : {}),
    ...(prefills > 0 ? { kvTransfer: Array.from({ length: mockers }, (_, i) => (i < prefills ? afterNats[apis + metrics + i]! : 0)) } : {}),
    // A router that subscribes to the workers' raw streams is told their ports: one consecutive run, as --zmq-kv-events-ports lays them out.
    ...(roles.has("mockers") && usesEventSources(config) && !config.zmqKvEventsPorts ? { rawBase: pickFreeRange(host, globalWorkers(config) * config.dataParallelSize) } : {}),
  };
}

export async function startStack(given: UpConfig, deps: StackDeps): Promise<StackHandle> {
  const { logger } = deps;
  const { roles } = parseRoles(given.roles);
  if (given.stateFile) await claimStateFile(given.stateFile, logger);
  const ports = choosePorts(given, roles);
  const where = stackDiscovery(given, ports.frontend, defaultDiscoveryDir());
  const config: ResolvedConfig = { ...given, namespace: where.namespace, discoveryDir: where.discoveryDir };
  const { discoveryDir } = where;
  // --router-replica-sync without --nats-url: a nats-server of the stack's own, started first.
  const natsBin = ports.nats === undefined ? undefined : (findNatsServer(deps.env ?? process.env, existsSync, config.natsServer) ?? thrown(new ConfigError([NATS_INSTALL_HINT])));
  const natsHost = dialHost(config.host);
  await using scope = new AsyncDisposableStack();
  // --runtime dynamo: Dynamo's own roles need their Python, and the cards a model directory.
  const dynamo = config.runtime === "dynamo" ? scope.use(resolveDynamoRoles(config, deps.env ?? process.env)) : undefined;
  const peersPython = dynamo ? undefined : peersPythonForCommands(config, deps.env ?? process.env);
  const stackPlan = plan(config, { self: deps.self ?? selfCommand(), ports, discoveryDir, natsUrl: ports.nats && natsUrlOf(natsHost, ports.nats), ...(dynamo ? { dynamo } : {}), ...(peersPython ? { peersPython } : {}) });
  if (natsBin !== undefined) stackPlan.processes.unshift(natsProcessSpec(natsBin, config.host, natsHost, ports.nats!, config.readyTimeout));
  const supervisor = new Supervisor(stackPlan.processes.map((p) => p.name), { write: deps.write, color: deps.color, format: config.logFormat, logDir: config.logDir, env: childEnvironment(deps.env ?? process.env) });
  // A stack's own discovery subdirectory goes once its children are stopped (first), with whatever
  // they left: Dynamo's roles keep their record directories, and a killed role its records.
  if (where.own && given.discoveryDir === undefined && config.discoveryBackend === "file") scope.defer(() => rm(discoveryDir, { recursive: true, force: true }).catch(() => {}));
  scope.defer(() => supervisor.stop(config.gracePeriod * 1000));
  let store: DiscoveryStore | undefined;
  // kvcr-mock's own discovery store: a Dynamo stack's records are Dynamo's (its mockers find the agent themselves).
  if ((roles.has("mockers") || stackPlan.awaitAgentRecord) && !dynamo) {
    const opened = await openDiscoveryStore({ ...config, discoveryDir }, logger);
    store = opened;
    scope.defer(() => opened.close());
  }

  const started = new Map<string, SupervisedChild>();
  /** Every gate passes, or the first child of the stack to die (or a cancel) ends the wait. */
  const allReady = async (gates: Promise<void>[]) => {
    const cancelled = (deps.cancel ?? new Promise<never>(() => {})).then(() => "cancelled" as const);
    const outcome = await Promise.race([Promise.all(gates).then(() => undefined), supervisor.failure, cancelled]);
    if (outcome === "cancelled") throw new KvcrError("STACK_CANCELLED", "start-up cancelled");
    if (outcome) {
      const child = started.get(outcome.name)!;
      await child.drained;
      throw new ReadinessError(`${outcome.name} ${describeExit(outcome)} during start-up${supervisor.tailText(child)}`);
    }
  };
  for (const stage of Object.values(STAGES)) {
    if (stage === STAGES.mockers && stackPlan.awaitAgentRecord) {
      logger.info(`waiting for a state agent's record in discovery (namespace ${config.namespace}, ${config.discoveryBackend === "etcd" ? `etcd ${config.etcdEndpoints}` : discoveryDir}) before starting mockers`);
      const agent = await waitForAgentRecord(store!, config, deps.cancel);
      logger.info(`state agent ${agent.agent_id} found in discovery (${agent.http_url})`);
    }
    const specs = stackPlan.processes.filter((p) => p.stage === stage);
    if (specs.length === 0) continue;
    if (stage === STAGES.mockers && config.kvStateAgent && store) await refuseOrdinalOverlap(store, config);
    for (const spec of specs) {
      const child = supervisor.spawn(spec.name, spec.argv, spec.env);
      started.set(spec.name, child);
      logger.debug(`started ${spec.name} (pid ${child.pid}): ${spec.argv.join(" ")}`);
    }
    // A stage is ready when every child of it is; any child of the stack dying ends the wait.
    const gates = specs.map((spec) => supervisor.waitReady(started.get(spec.name)!, gateOf(spec)));
    await allReady(gates);
    logger.info(`${specs.map((s) => s.name).join(", ")} ready`);
  }

  // State-agent mode with our own agent and mockers: ready means wired, every raw stream followed.
  if (config.kvStateAgent && roles.has("agent") && !config.agentCmd && !config.mockerCmd && !dynamo) {
    const mockers = stackPlan.processes.filter((p) => p.role === "mocker");
    const ranks = config.workersPerProcess * config.dataParallelSize;
    const gates = mockers.map((spec) => supervisor.waitReady(started.get(spec.name)!, { ...probeRawSubscribed(spec.url, ranks), timeoutMs: config.readyTimeout * 1000, intervalMs: 250 }));
    await allReady(gates);
    if (mockers.length > 0) logger.info("every raw stream has its agent subscription");
  }

  const processes: StackProcess[] = stackPlan.processes.map((spec) => ({ name: spec.name, role: spec.role, pid: started.get(spec.name)!.pid, url: spec.url, external: spec.external, ports: spec.ports, restarts: 0, livenessRestarts: 0 }));
  if (store) await addWorkerEndpoints(store, config, processes);
  const state = (): StackState => ({
    pid: process.pid,
    namespace: config.namespace,
    discovery_dir: discoveryDir,
    mode: config.kvStateAgent ? "state_agent" : "direct",
    model: config.modelName,
    agent_url: stackPlan.agentUrl ?? null,
    frontend_url: stackPlan.frontendUrl ?? null,
    frontend_urls: stackPlan.frontendUrls,
    processes: processes.map(({ rawEndpoints, replayEndpoints, workerApiUrls, livenessRestarts, ...p }) => ({
      ...p,
      liveness_restarts: livenessRestarts,
      ...(rawEndpoints ? { raw_endpoints: rawEndpoints } : {}),
      ...(replayEndpoints ? { replay_endpoints: replayEndpoints } : {}),
      ...(workerApiUrls ? { worker_api_urls: workerApiUrls } : {}),
    })),
  });
  const stateFile = config.stateFile ? new StateFileWriter(config.stateFile, state, () => supervisor.isStopping) : undefined;
  const writeState = async () => stateFile?.write();
  if (config.prometheusConfig) {
    await writePrometheusConfig(config.prometheusConfig, processes.filter((p) => p.role !== "nats")); // nats-server has no Prometheus endpoint
    logger.info(`Prometheus scrape config (${processes.length} /metrics targets) written to ${resolvePath(config.prometheusConfig)}`);
  }
  if (stateFile) {
    scope.defer(() => stateFile.remove());
    await writeState();
  }

  // --restart on-failure: from now on a child that exits unasked is restarted (docs/up.md, Supervision).
  if (config.restart === "on-failure") {
    const policy = { maxRestarts: config.maxRestarts, windowMs: DEFAULT_RESTART_WINDOW_MS, backoffMs: config.restartBackoff * 1000, backoffMaxMs: DEFAULT_BACKOFF_MAX_MS, stableMs: DEFAULT_STABLE_MS };
    for (const spec of stackPlan.processes) {
      const entry = processes.find((p) => p.name === spec.name)!;
      supervisor.restartOnFailure(started.get(spec.name)!, spec.argv, gateOf(spec), policy, {
        onRestart: ({ name, exit, attempt, delayMs }) => {
          logger.warn(`${name} (pid ${exit.pid}) ${describeExit(exit)}: restarting it in ${fmtDelay(delayMs)} (attempt ${attempt} of ${config.maxRestarts} within ${DEFAULT_RESTART_WINDOW_MS / 60_000} min)`);
          // The state file says so at once, not only once the new child is ready (it may never be).
          entry.restarts++;
          if (exit.hungMs !== undefined) entry.livenessRestarts++;
          void writeState().catch((err: unknown) => logger.warn(`cannot rewrite --state-file: ${(err as Error).message}`));
        },
        onNotReady: (name, err) => logger.warn(`restarted ${name} is not ready: ${err.message}`),
        onReady: (child, restarts) => {
          entry.pid = child.pid;
          entry.restarts = restarts;
          logger.info(`${child.name} restarted (pid ${child.pid}) and ready again`);
          void (async () => {
            if (store && spec.role === "mocker") await addWorkerEndpoints(store, config, processes).catch(() => {}); // it may have picked new raw ports
            await writeState();
          })().catch((err: unknown) => logger.warn(`cannot rewrite --state-file: ${(err as Error).message}`));
        },
      }, spec.env);
    }
  }

  // --liveness-timeout: a child up but silent that long is SIGKILLed; its exit goes the way of any exit.
  if (config.livenessTimeout > 0) {
    const timeoutMs = config.livenessTimeout * 1000;
    const liveness = watchLiveness({
      targets: stackPlan.processes.map((spec) => ({ name: spec.name, url: spec.livenessUrl })),
      timeoutMs,
      upChild: (name) => supervisor.upChild(name),
      hung: ({ name, url }, pid, silentMs) => {
        logger.warn(`${name} (pid ${pid}) has not answered ${url} for ${(silentMs / 1000).toFixed(1)} s (--liveness-timeout ${config.livenessTimeout}): SIGKILL`);
        supervisor.killHung(name, silentMs);
      },
    });
    scope.defer(() => liveness.stop());
  }

  // Fault schedules: `kill` is a crash (SIGKILL; --restart decides what follows), `restart` a
  // clean stop and start again on the same argv and readiness gate.
  const childOf = (target: ScheduleTarget, mocker: string | undefined) => {
    const spec = stackPlan.processes.find((p) => (target.role === "worker" ? p.role === "mocker" && mocker !== undefined && mockerBase(p.url) === mockerBase(mocker) : p.role === target.role));
    const entry = spec && processes.find((p) => p.name === spec.name);
    if (!spec || !entry) throw new KvcrError("NO_SUCH_CHILD", `this stack runs no ${target.role === "worker" ? `mocker at ${mocker ?? "(unknown)"}` : target.role} of its own to control`);
    return { spec, entry };
  };
  const control: ProcessControl = {
    kill: async (target, mocker) => {
      const { spec } = childOf(target, mocker);
      const child = supervisor.current(spec.name);
      if (!child?.running) throw new KvcrError("NOT_RUNNING", `${spec.name} is not running`);
      child.signal("SIGKILL");
      return `${spec.name} (pid ${child.pid}, SIGKILL)`;
    },
    restart: async (target, mocker) => {
      const { spec, entry } = childOf(target, mocker);
      const before = entry.pid;
      const next = await supervisor.restartNow(spec.name, spec.argv, gateOf(spec), config.gracePeriod * 1000, spec.env);
      entry.pid = next.pid;
      if (store && spec.role === "mocker") await addWorkerEndpoints(store, config, processes).catch(() => {});
      await writeState().catch((err: unknown) => logger.warn(`cannot rewrite --state-file: ${(err as Error).message}`));
      return `${spec.name} (pid ${before} → ${next.pid}, ready again)`;
    },
  };

  const owned = scope.move();
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= owned.disposeAsync());
  return {
    ready: Promise.resolve(),
    ports: Object.fromEntries(processes.map((p) => [p.name, p.ports.http as number])),
    plan: stackPlan,
    agentUrl: stackPlan.agentUrl,
    frontendUrl: stackPlan.frontendUrl,
    frontendUrls: stackPlan.frontendUrls,
    discoveryDir,
    namespace: config.namespace,
    processes,
    failure: supervisor.failure,
    state,
    control,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A process's readiness gate, the same at start and after a restart. */
function gateOf(spec: StackPlan["processes"][number]): ReadinessGate {
  const { what, probe } = probeFor(spec.readiness);
  const intervalMs = spec.role === "agent" ? 1_000 : 250; // docs/up.md: the agent once a second, the rest four times
  return { what, probe, timeoutMs: spec.readyTimeoutS * 1000, intervalMs };
}

/** Whether up starts a nats-server of its own: replica sync without --nats-url, for its frontends. */
function startsNats(config: UpConfig, roles: Set<string>): boolean {
  return config.routerReplicaSync && config.natsUrl === undefined && roles.has("frontend") && config.frontendCmd === undefined;
}

function thrown(err: Error): never {
  throw err;
}

function fmtDelay(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

