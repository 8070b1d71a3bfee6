import { describe, expect, test } from "bun:test";
import { commonOptions } from "../../config/common.ts";
import { loadConfig } from "../../config/load.ts";
import { agentOptions } from "../../config/agent.ts";
import { frontendOptions } from "../../config/frontend.ts";
import { mockerOptions } from "../../config/mocker.ts";
import { upConfigFrom, upOptions, upProblems, type UpConfig } from "../../config/up.ts";
import { ConfigError } from "../../lib/errors.ts";
import { thrownBy } from "../../../test/harness.ts";
import { plan, stackDiscovery, type PlanContext } from "./plan.ts";
import { LIFELINE_WATCH } from "./template.ts";

const table = { ...upOptions, ...commonOptions };
const up = (...argv: string[]): UpConfig => loadConfig(table, { argv, env: {} }, upProblems).config;
const ctx = (mockers = 1): PlanContext => ({ self: ["/bin/kvcr"], ports: { agent: 9091, frontend: 8000, mockers: Array.from({ length: mockers }, (_, i) => 7000 + i) }, discoveryDir: "/d" });
/** A planned mocker's argv, loaded back the way the child will load it. */
const mockerConfigOf = (argv: string[]) => loadConfig({ ...mockerOptions, ...commonOptions }, { argv: argv.slice(2), env: {} }).config;

describe("up --worker-api", () => {
  test("every mocker serves its workers' APIs: on the free ports up picked (kept across restarts: they are in its argv), or global worker k on the base + k", () => {
    const picked = { ...ctx(2), ports: { ...ctx(2).ports, workerApi: [31000, 31001, 31002, 31003, 31004, 31005] } };
    const free = plan(up("--worker-api", "--mocker-processes=2", "--workers-per-process=3"), picked).processes.filter((s) => s.role === "mocker");
    expect(free.map((s) => [mockerConfigOf(s.argv).openaiPortBase, mockerConfigOf(s.argv).openaiPorts])).toEqual([[undefined, [31000, 31001, 31002]], [undefined, [31003, 31004, 31005]]]);
    expect(free.map((s) => s.ports.openai)).toEqual([[31000, 31001, 31002], [31003, 31004, 31005]]);
    const based = plan(up("--worker-api", "--openai-port-base=30000", "--mocker-processes=2", "--workers-per-process=3", "--data-parallel-size=2"), ctx(2)).processes.filter((s) => s.role === "mocker");
    expect(based.map((s) => mockerConfigOf(s.argv).openaiPortBase)).toEqual([30000, 30003]);
    expect(based.map((s) => s.ports.openai)).toEqual([[30000, 30001, 30002], [30003, 30004, 30005]]);
    expect(plan(up(), ctx()).processes.filter((s) => s.role === "mocker").map((s) => [mockerConfigOf(s.argv).openaiPortBase, s.ports.openai])).toEqual([[undefined, undefined]]);
  });

  test("a timing profile reaches every mocker as up resolved it: the profile model, the profile, and G1 and KV bytes from its geometry", () => {
    const config = upConfigFrom(["--timing-profile", "builtin:qwen3-8b-h200-vllm0.24-tp1", "--mocker-processes", "2", "--workers-per-process", "1"]);
    expect(config.timingModel).toBe("profile");
    const mockers = plan(config, ctx(2)).processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv));
    expect(mockers).toHaveLength(2);
    for (const m of mockers) {
      expect([m.timingModel, m.timingProfile, m.numGpuBlocksOverride, m.kvBytesPerToken]).toEqual(["profile", "builtin:qwen3-8b-h200-vllm0.24-tp1", config.numGpuBlocksOverride, 147456]);
    }
    expect(config.numGpuBlocksOverride).not.toBe(16384);
  });

  test("--frontend-cmd gets the workers' URLs as words, one comma-separated word, a repeated flag, and a free metrics port; naming them turns the worker API on", () => {
    const c = { ...ctx(2), ports: { ...ctx(2).ports, workerApi: [31000, 31001, 31002, 31003], frontendMetrics: 29555 } };
    const cmd = "r {worker_api_urls} --csv {worker_api_urls_csv} {worker_api_urls:--worker} {worker_api_urls:--url=} --prom {metrics_port}";
    const p = plan(up("--mocker-processes=2", "--workers-per-process=2", "--frontend-cmd", cmd), c);
    const urls = [31000, 31001, 31002, 31003].map((port) => `http://127.0.0.1:${port}`);
    expect(p.processes.find((s) => s.role === "frontend")!.argv.at(-1)).toBe(
      `${LIFELINE_WATCH}exec r ${urls.join(" ")} --csv ${urls.join(",")} ${urls.map((u) => `--worker ${u}`).join(" ")} ${urls.map((u) => `--url=${u}`).join(" ")} --prom 29555`,
    );
    expect(p.processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv).openaiPorts)).toEqual([[31000, 31001], [31002, 31003]]);
    expect(mockerConfigOf(plan(up("--worker-api", "--get-load-format=object"), ctx()).processes.find((s) => s.role === "mocker")!.argv).getLoadFormat).toBe("object");
  });

  test("a disaggregated stack's router gets its prefill and decode workers apart, and each prefill worker beside its process's transfer port (picked up front, given to the process)", () => {
    const c = { ...ctx(3), ports: { ...ctx(3).ports, workerApi: [31000, 31001, 31002, 31003, 31004, 31005], kvTransfer: [32000, 0, 0] } };
    const cmd = "r {prefill_api_urls:--p} {decode_api_urls:--d} {prefill_bootstrap:--prefill} {prefill_bootstrap}";
    const p = plan(upConfigFrom(["--prefill-workers=2", "--decode-workers=4", "--frontend-cmd", cmd]), c);
    const u = (port: number) => `http://127.0.0.1:${port}`;
    expect(p.processes.find((s) => s.role === "frontend")!.argv.at(-1)).toBe(
      `${LIFELINE_WATCH}exec r --p ${u(31000)} --p ${u(31001)} --d ${u(31002)} --d ${u(31003)} --d ${u(31004)} --d ${u(31005)} --prefill ${u(31000)} 32000 --prefill ${u(31001)} 32000 ${u(31000)} 32000 ${u(31001)} 32000`,
    );
    expect(p.processes.filter((s) => s.role === "mocker").map((s) => [mockerConfigOf(s.argv).disaggregationMode, mockerConfigOf(s.argv).kvTransferPort])).toEqual([["prefill", 32000], ["decode", undefined], ["decode", undefined]]);
    expect(thrownBy(ConfigError, () => plan(up("--frontend-cmd", "r {decode_api_urls}"), ctx())).problems).toEqual(["--frontend-cmd: {decode_api_urls} name a disaggregated stack's workers; give --prefill-workers and --decode-workers"]);
  });

  test("a router that subscribes to the workers' raw KV events gets URL=endpoints per worker, each rank on the base up picked + its global rank", () => {
    const c = { ...ctx(2), ports: { ...ctx(2).ports, workerApi: [31000, 31001, 31002, 31003], rawBase: 40000, frontendMetrics: 29001 } };
    const p = plan(up("--mocker-processes=2", "--workers-per-process=2", "--data-parallel-size=2", "--no-kv-state-agent", "--frontend-cmd", "r {worker_kv_event_sources:--kv-event-source} --prom {metrics_port}"), c);
    const e = (port: number) => `tcp://127.0.0.1:${port}`;
    const sources = [0, 1, 2, 3].map((k) => `--kv-event-source http://127.0.0.1:${31000 + k}=${e(40000 + 2 * k)},${e(40001 + 2 * k)}`);
    expect(p.processes.find((s) => s.role === "frontend")!.argv.at(-1)).toBe(`${LIFELINE_WATCH}exec r ${sources.join(" ")} --prom 29001`);
    expect(p.processes.find((s) => s.role === "frontend")!.ports).toEqual({ http: 8000, metrics: 29001 });
    expect(p.processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv).zmqKvEventsPorts)).toEqual([[40000, 40002], [40004, 40006]]);
  });

  test("a worker-URL placeholder with --mocker-cmd, a flag on a single value, or an unknown placeholder is a config error", () => {
    const problem = (...argv: string[]) => thrownBy(ConfigError, () => plan(up(...argv), ctx())).problems[0];
    expect(problem("--mocker-cmd", "m {port}", "--frontend-cmd", "r {worker_api_urls_csv}")).toStartWith("--frontend-cmd: the workers' URLs ({worker_api_urls}, {worker_api_urls_csv}, {prefill_api_urls}, {decode_api_urls}, {prefill_bootstrap}, {worker_kv_event_sources}) with --mocker-cmd: up cannot know the API ports");
    expect(problem("--roles", "frontend", "--frontend-cmd", "r {worker_api_urls}")).toBe("--frontend-cmd: the workers' URLs with --roles frontend: up starts no mockers here, so it knows no worker API ports; give the URLs in the command instead");
    expect(problem("--frontend-cmd", "r {port:--p}")).toBe("--frontend-cmd: {port:--p}: only {worker_api_urls}, {prefill_api_urls}, {decode_api_urls}, {prefill_bootstrap}, {worker_kv_event_sources} take a flag to repeat; {port} is one value");
    expect(problem("--frontend-cmd", "r {worker_urls}")).toStartWith("--frontend-cmd: unknown placeholder(s) {worker_urls}; known:");
    expect(problem("--frontend-cmd", "r {nope:--x}")).toStartWith("--frontend-cmd: unknown placeholder(s) {nope}; known:");
  });

  test("a base without --worker-api, past 65535, or overlapping the event ports is refused", () => {
    const problems = (...argv: string[]) => [...thrownBy(ConfigError, () => up(...argv)).problems];
    expect(problems("--openai-port-base=30000")).toEqual(["--openai-port-base: needs --worker-api"]);
    expect(problems("--worker-api", "--openai-port-base=65535")).toEqual(["--openai-port-base: base 65535 + 2 workers of this stack exceeds port 65535"]);
    expect(problems("--worker-api", "--openai-port-base=20001", "--zmq-kv-events-ports=20000")).toEqual(["--openai-port-base: range 20001–20002 overlaps --zmq-kv-events-ports 20000–20001"]);
  });
});

describe("plan", () => {
  test("defaults: agent, one mocker × 2 workers in state-agent mode with G2 on, frontend, in that order", () => {
    const p = plan(up(), ctx());
    expect(p.processes.map((s) => [s.name, s.stage, s.readiness.kind])).toEqual([["agent", 0, "ok"], ["mocker-0", 1, "ok"], ["frontend", 2, "frontend"]]);
    const [agent, mocker, frontend] = p.processes;
    expect(agent!.argv.slice(0, 2)).toEqual(["/bin/kvcr", "agent"]);
    expect(loadConfig({ ...agentOptions, ...commonOptions }, { argv: agent!.argv.slice(2), env: {} }).config).toMatchObject({ port: 9091, maxSlots: 8, namespace: "dynamo", discoveryDir: "/d", host: "127.0.0.1" });
    expect(agent!.readiness).toEqual({ kind: "ok", url: "http://127.0.0.1:9091/live" });
    expect(mocker!.argv.slice(0, 2)).toEqual(["/bin/kvcr", "mocker"]);
    expect(mockerConfigOf(mocker!.argv)).toMatchObject({
      modelName: "mock-model", numWorkers: 2, numHostBlocks: 4096, kvStateAgent: true, kvStateAgentRawHost: "127.0.0.1",
      kvStateAgentCacheSlot: 0, zmqKvEventsPorts: [0, 0], httpPort: 7000, discoveryDir: "/d",
    });
    expect(mocker!.readiness).toEqual({ kind: "ok", url: "http://127.0.0.1:7000/health" });
    expect(frontend!.argv.slice(0, 2)).toEqual(["/bin/kvcr", "frontend"]);
    expect(loadConfig({ ...frontendOptions, ...commonOptions }, { argv: frontend!.argv.slice(2), env: {} }).config).toMatchObject({ httpPort: 8000, routerMode: "kv", kvCacheBlockSize: 64, discoveryDir: "/d" });
    expect(frontend!.readiness).toEqual({ kind: "frontend", modelsUrl: "http://127.0.0.1:8000/v1/models", healthUrl: "http://127.0.0.1:8000/health", model: "mock-model", workers: 2 });
    expect([p.agentUrl, p.frontendUrl, p.awaitAgentRecord]).toEqual(["http://127.0.0.1:9091", "http://127.0.0.1:8000", false]);
  });

  test("P × W with dp: disjoint raw/replay port ranges (B + k × dp) and CacheOwner ordinals (base + k × dp), every engine flag handed on", () => {
    const p = plan(up("--mocker-processes=2", "--workers-per-process=3", "--data-parallel-size=2", "--zmq-kv-events-ports=20000", "--zmq-replay-ports=30000", "--cache-slot-base=100", "--block-size=16", "--speedup-ratio=0", "--log-level=debug"), ctx(2));
    const configs = p.processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv));
    expect(configs.map((c) => [c.zmqKvEventsPorts, c.zmqReplayPorts, c.kvStateAgentCacheSlot, c.numWorkers, c.dataParallelSize, c.blockSize, c.speedupRatio])).toEqual([
      [[20000, 20002, 20004], [30000, 30002, 30004], 100, 3, 2, 16, 0],
      [[20006, 20008, 20010], [30006, 30008, 30010], 106, 3, 2, 16, 0],
    ]);
    expect(p.processes.find((s) => s.name === "agent")!.argv).toContain("--max-slots=12");
    const frontendArgv = plan(
      up("--router-mode=round-robin", "--router-temperature=0.5", "--router-host-cache-hit-weight=0.5", "--no-router-kv-events", "--router-prefill-load-scale=2", "--active-prefill-tokens-threshold=100", "--etcd-endpoints=http://e:2379", "--discovery-backend=etcd"),
      ctx(),
    ).processes.at(-1)!.argv;
    expect(loadConfig({ ...frontendOptions, ...commonOptions }, { argv: frontendArgv.slice(2), env: {} }).config).toMatchObject({
      routerMode: "round-robin", routerTemperature: 0.5, routerHostCacheHitWeight: 0.5, routerKvEvents: false, routerPrefillLoadScale: 2, activePrefillTokensThreshold: 100,
      discoveryBackend: "etcd", etcdEndpoints: "http://e:2379", discoveryDir: undefined,
    });
    expect(p.processes.every((s) => s.argv.includes("--log-level=debug"))).toBe(true);
    expect(p.processes.find((s) => s.name === "frontend")!.readiness).toMatchObject({ workers: 6 });
  });

  test("--strict-health reaches the frontend and --max-event-payload-bytes the agent", () => {
    const p = plan(up("--strict-health", "--max-event-payload-bytes", "2048"), ctx());
    const argvOf = (role: string) => p.processes.find((x) => x.role === role)!.argv.slice(2);
    expect(loadConfig({ ...frontendOptions, ...commonOptions }, { argv: argvOf("frontend"), env: {} }).config.strictHealth).toBe(true);
    expect(loadConfig({ ...agentOptions, ...commonOptions }, { argv: argvOf("agent"), env: {} }).config.maxEventPayloadBytes).toBe(2048);
    const plain = plan(up(), ctx());
    expect(loadConfig({ ...frontendOptions, ...commonOptions }, { argv: plain.processes.find((x) => x.role === "frontend")!.argv.slice(2), env: {} }).config.strictHealth).toBe(false);
  });

  test("direct mode: no agent, no state-agent flags on the mockers", () => {
    const p = plan(up("--no-kv-state-agent"), ctx());
    expect(p.processes.map((s) => s.name)).toEqual(["mocker-0", "frontend"]);
    const c = mockerConfigOf(p.processes[0]!.argv);
    expect([c.kvStateAgent, c.kvStateAgentRawHost, c.kvStateAgentCacheSlot]).toEqual([false, undefined, undefined]);
    expect(p.agentUrl).toBeUndefined();
  });

  test("--roles mockers waits for the agent's record instead of starting one", () => {
    const m = plan(up("--roles=mockers", "--cache-slot-base=8"), ctx());
    expect(m.processes.map((s) => s.name)).toEqual(["mocker-0"]);
    expect(m.awaitAgentRecord).toBe(true);
    expect(mockerConfigOf(m.processes[0]!.argv).kvStateAgentCacheSlot).toBe(8);
  });

  test("--roles agent,frontend gates the frontend on /live", () => {
    const af = plan(up("--roles=agent,frontend"), ctx(0));
    expect(af.processes.map((s) => s.name)).toEqual(["agent", "frontend"]);
    expect(af.processes[1]!.readiness).toEqual({ kind: "ok", url: "http://127.0.0.1:8000/live" });
  });

  test("liveness: a kvcr-mock role is probed on /live; an external command on the route its readiness gate requires", () => {
    const own = plan(up(), ctx()).processes.map((s) => [s.name, s.livenessUrl]);
    expect(own).toEqual([["agent", "http://127.0.0.1:9091/live"], ["mocker-0", "http://127.0.0.1:7000/live"], ["frontend", "http://127.0.0.1:8000/live"]]);
    const external = plan(up("--agent-cmd", "a {port}", "--mocker-cmd", "m {port}", "--frontend-cmd", "f {port}"), ctx()).processes.map((s) => [s.name, s.livenessUrl]);
    expect(external).toEqual([["agent", "http://127.0.0.1:9091/live"], ["mocker-0", "http://127.0.0.1:7000/health"], ["frontend", "http://127.0.0.1:8000/health"]]);
  });

  test("external commands: placeholders filled and shell-quoted, run by exec under /bin/sh", () => {
    const p = plan(up("--mocker-processes=2", "--mocker-cmd", "my-mocker --port {port} --slot {cache_slot} --raw {zmq_kv_events_ports} --ns {namespace} --agent {agent_url} {{x}}", "--discovery-dir", "/tmp/a b"), ctx(2));
    const m1 = p.processes.find((s) => s.name === "mocker-1")!;
    expect(m1.external).toBe(true);
    expect(m1.argv).toEqual(["/bin/sh", "-c", `${LIFELINE_WATCH}exec my-mocker --port 7001 --slot 2 --raw 0,0 --ns dynamo --agent http://127.0.0.1:9091 {x}`]);
    const agent = plan(up("--agent-cmd", "{kvcr_mock} agent --port {port} --discovery-dir {discovery_dir}"), { ...ctx(), discoveryDir: "/tmp/a b", self: ["/opt/my bun", "cli.ts"] }).processes[0]!;
    expect(agent.argv[2]).toBe(`${LIFELINE_WATCH}exec '/opt/my bun' cli.ts agent --port 9091 --discovery-dir '/tmp/a b'`);
  });

  test("an unknown placeholder or a mocker config the mocker would refuse is a config error before anything starts", () => {
    expect(thrownBy(ConfigError, () => plan(up("--frontend-cmd", "x {cache_slot}"), ctx())).problems[0]).toStartWith("--frontend-cmd: unknown placeholder(s) {cache_slot}; known:");
    expect(thrownBy(ConfigError, () => plan(up("--no-kv-state-agent", "--kv-state-agent-router-hints"), ctx())).problems).toEqual(["mocker-0: --kv-state-agent-router-hints: needs --kv-state-agent"]);
  });
});

describe("upProblems", () => {
  const problems = (...argv: string[]) => thrownBy(ConfigError, () => up(...argv)).problems;
  test("bad roles, port ranges past 65535 or overlapping, G2 off in state-agent mode, too few agent slots", () => {
    expect(problems("--roles", "agent,workers")).toEqual(['--roles: got "agent,workers", expected a comma-separated list of agent, mockers, frontend']);
    expect(problems("--zmq-kv-events-ports", "65535")).toEqual(["--zmq-kv-events-ports: base 65535 + 2 ranks of this stack exceeds port 65535"]);
    expect(problems("--zmq-kv-events-ports", "5000", "--zmq-replay-ports", "5001")).toEqual(["--zmq-replay-ports: range 5001–5002 overlaps --zmq-kv-events-ports 5000–5001"]);
    expect(problems("--num-host-blocks", "0")).toEqual(["--num-host-blocks: state-agent mode reports a host tier (G2), give a count > 0 (or --no-kv-state-agent)"]);
    expect(problems("--max-slots", "1")).toEqual(["--max-slots: got 1, but this stack has 2 CacheOwners (workers × dp); the agent would reject some"]);
  });
});

test("upConfigFrom: flags validated as `kvcr-mock up` does", () => {
  expect(upConfigFrom(["--mocker-processes", "3"]).mockerProcesses).toBe(3);
  expect(thrownBy(ConfigError, () => upConfigFrom(["--roles", "x"])).problems).toEqual(['--roles: got "x", expected a comma-separated list of agent, mockers, frontend']);
});

describe("stackDiscovery: where a stack's records live", () => {
  const at = (...argv: string[]) => stackDiscovery(up(...argv), 8123, "/shm/kvcr");
  test("a whole stack on the file backend with no namespace given: its own, from its frontend port, in its own subdirectory", () => {
    expect(at()).toEqual({ namespace: "dynamo-8123", discoveryDir: "/shm/kvcr/dynamo-8123", own: true });
    expect(at("--no-kv-state-agent")).toEqual({ namespace: "dynamo-8123", discoveryDir: "/shm/kvcr/dynamo-8123", own: true });
  });
  test("a given --discovery-dir is used as given, the namespace still its own", () => {
    expect(at("--discovery-dir", "/d")).toEqual({ namespace: "dynamo-8123", discoveryDir: "/d", own: true });
  });
  test("a given namespace (flag, environment, file) is used as given, in the shared directory", () => {
    expect(at("--namespace", "team")).toEqual({ namespace: "team", discoveryDir: "/shm/kvcr", own: false });
    expect(stackDiscovery(loadConfig(table, { argv: [], env: { DYN_NAMESPACE: "dyn" } }, upProblems).config, 8123, "/shm/kvcr").namespace).toBe("dyn");
    expect(stackDiscovery(loadConfig(table, { argv: [], env: { KVCR_NAMESPACE: "kv" } }, upProblems).config, 8123, "/shm/kvcr").namespace).toBe("kv");
    expect(at("--namespace", "team", "--discovery-dir", "/d")).toEqual({ namespace: "team", discoveryDir: "/d", own: false });
  });
  test("a stack spanning hosts (etcd, or a partial --roles) keeps the shared default", () => {
    expect(at("--roles", "agent,frontend")).toEqual({ namespace: "dynamo", discoveryDir: "/shm/kvcr", own: false });
    expect(at("--roles", "mockers")).toEqual({ namespace: "dynamo", discoveryDir: "/shm/kvcr", own: false });
    expect(at("--discovery-backend", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379").namespace).toBe("dynamo");
  });
  test("the plan hands the resolved namespace to every child", () => {
    const config = { ...up(), namespace: "dynamo-8000" };
    for (const spec of plan(config, ctx()).processes) expect(spec.argv.join(" ")).toContain("--namespace=dynamo-8000");
  });
});
