import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { commonOptions } from "./common.ts";
import { loadConfig } from "./load.ts";
import { extraEngineArgsOverlay, mockerOptions, mockerProblems, workerApiPorts, type MockerConfig } from "./mocker.ts";
import { upConfigFrom } from "./up.ts";

const table = { ...mockerOptions, ...commonOptions };

function load(argv: string[], files: Record<string, string> = {}) {
  const read = (p: string) => {
    const t = files[p];
    if (t === undefined) throw new Error(`ENOENT: no such file '${p}'`);
    return t;
  };
  return loadConfig(table, { argv, readFile: read }, (c) => mockerProblems(c as MockerConfig), {
    overlay: (c, problems) => extraEngineArgsOverlay(c as MockerConfig, problems, read),
  }).config;
}

const problems = (argv: string[], files: Record<string, string> = {}): string[] => [...thrownBy(ConfigError, () => load(argv, files)).problems];

const agentFlags = ["--kv-state-agent", "--zmq-kv-events-ports", "5557", "--num-host-blocks", "64", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "0"];

describe("mocker config", () => {
  test("defaults mirror dynamo.mocker / vLLM", () => {
    const c = load([]);
    expect([c.modelName, c.numWorkers, c.blockSize, c.numGpuBlocksOverride, c.maxNumSeqs, c.maxNumBatchedTokens]).toEqual(["mocker-engine", 1, 64, 16384, 256, 8192]);
    expect([c.enablePrefixCaching, c.enableChunkedPrefill, c.speedupRatio, c.dataParallelSize, c.seed, c.kvStateAgent]).toEqual([true, true, 1, 1, 0, false]);
  });

  test("host-tier flags: G2 decode offload, host event medium, event encoding (flags and extra-engine-args)", () => {
    const d = load([]);
    expect([d.hostOffloadDecodeBlocks, d.hostKvEventsMedium, d.kvEventsEncoding]).toEqual([false, "CPU_PINNED", "map"]);
    const c = load(["--host-offload-decode-blocks", "--host-kv-events-medium", "CPU", "--kv-events-encoding", "array"]);
    expect([c.hostOffloadDecodeBlocks, c.hostKvEventsMedium, c.kvEventsEncoding]).toEqual([true, "CPU", "array"]);
    const f = load(["--extra-engine-args", "x.json"], { "x.json": JSON.stringify({ engine: { host_offload_decode_blocks: true, host_kv_events_medium: "CPU" }, dynamo: { kv_events_encoding: "array" } }) });
    expect([f.hostOffloadDecodeBlocks, f.hostKvEventsMedium, f.kvEventsEncoding]).toEqual([true, "CPU", "array"]);
    const bad = problems(["--host-kv-events-medium", "cpu_pinned", "--kv-events-encoding", "json"]);
    expect(bad.length).toBe(2);
    expect(bad[0]).toContain("--host-kv-events-medium");
    expect(bad[0]).toContain("CPU_PINNED, CPU");
    expect(bad[1]).toContain("--kv-events-encoding");
    expect(bad[1]).toContain("map, array");
  });

  test("--seed takes every integer it can honour (to 2^53 − 1) and refuses larger ones", () => {
    expect(load(["--seed", "4294967296"]).seed).toBe(4294967296);
    expect(load(["--seed", "9007199254740991"]).seed).toBe(Number.MAX_SAFE_INTEGER);
    for (const big of ["9007199254740992", "18446744073709551615"]) {
      const p = problems(["--seed", big]);
      expect(p.length).toBe(1);
      expect(p[0]).toContain("--seed");
      expect(p[0]).toContain("from 0 to 9007199254740991");
    }
  });

  test("state-agent mode: every missing required flag is named", () => {
    expect(problems(["--kv-state-agent"])).toEqual([
      "--zmq-kv-events-ports: required with --kv-state-agent (the agent subscribes to each rank's raw PUB)",
      "--num-host-blocks: required with --kv-state-agent (state-agent mode reports a host tier (G2))",
      "--kv-state-agent-raw-host: required with --kv-state-agent (the host the agent dials)",
      "--kv-state-agent-cache-slot: required with --kv-state-agent (the first CacheOwner ordinal of this process)",
    ]);
    expect(load(agentFlags).kvStateAgent).toBe(true);
  });

  test.each(["", "*", "localhost", "0.0.0.0", "::", "tcp://h", "h:1", "h/p"])("raw host %p is rejected", (host) => {
    const lines = problems([...agentFlags.slice(0, -4), "--kv-state-agent-raw-host", host, "--kv-state-agent-cache-slot", "0"]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith(`--kv-state-agent-raw-host: got ${JSON.stringify(host)}`);
  });

  test("--zmq-kv-events-ports needs exactly one base port per worker", () => {
    expect(problems(["--num-workers", "2", "--zmq-kv-events-ports", "5557"])).toEqual([
      "--zmq-kv-events-ports: got 1 base port(s), expected exactly one per worker (2)",
    ]);
  });

  test("a base event port's ranks must fit below 65536", () => {
    expect(problems(["--data-parallel-size", "4", "--zmq-kv-events-ports", "65534"])).toEqual(["--zmq-kv-events-ports: base 65534 + 3 ranks exceeds port 65535"]);
  });

  test("replay ports need event ports", () => {
    expect(problems(["--zmq-replay-ports", "6000"])).toEqual(["--zmq-replay-ports: replay needs --zmq-kv-events-ports too"]);
  });

  test("each unmet requirement (prefix caching for a host tier, state-agent mode for hints and ids, hex ids) is its own problem line", () => {
    expect(problems(["--num-host-blocks", "8", "--no-enable-prefix-caching", "--kv-state-agent-router-hints", "--kv-state-agent-dc", "XYZ"])).toEqual([
      "--num-host-blocks: a host tier requires prefix caching (drop --no-enable-prefix-caching)",
      "--kv-state-agent-router-hints: needs --kv-state-agent",
      "--kv-state-agent-dc: needs --kv-state-agent",
      '--kv-state-agent-dc: got "XYZ", expected 16 lowercase hex digits',
    ]);
  });

  test("state-agent settings without --kv-state-agent, a topic with it, and a bad namespace are errors, not silently unused", () => {
    expect(problems(["--kv-state-agent-raw-host", "10.0.0.5", "--kv-state-agent-cache-slot", "3", "--kv-state-endpoint", "x/y"])).toEqual([
      "--kv-state-agent-raw-host: needs --kv-state-agent",
      "--kv-state-agent-cache-slot: needs --kv-state-agent",
      "--kv-state-endpoint: needs --kv-state-agent",
    ]);
    expect(problems([...agentFlags, "--kv-events-topic", "t"])).toEqual([
      "--kv-events-topic: not used with --kv-state-agent (each worker's raw topic is derived from its CacheOwner ids)",
    ]);
    expect(problems(["--namespace", "bad ns"])).toEqual([
      '--namespace (or KVCR_NAMESPACE, DYN_NAMESPACE): got "bad ns", use 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ]);
  });
});

describe("--kv-events-encoding array with --kv-state-agent", () => {
  const refusal = "--kv-events-encoding array: cannot be used with --kv-state-agent (vLLM's positional events have no ownership field, which state-agent mode needs to mark KVCR-owned G2 blocks)";
  const agentFile = JSON.stringify({ engine: { num_host_blocks: 64 }, dynamo: { kv_state_agent: true, zmq_kv_events_port: 5557, kv_state_agent_raw_host: "127.0.0.1", kv_state_agent_cache_slot: 0 } });

  test("refused as flags, in one line naming both options", () => {
    expect(problems([...agentFlags, "--kv-events-encoding", "array"])).toEqual([refusal]);
    expect(load([...agentFlags, "--kv-events-encoding", "map"]).kvEventsEncoding).toBe("map");
  });

  test("the resolved configuration decides: an --extra-engine-args file can make or unmake the combination", () => {
    // The file turns on state-agent mode, the flag asks for arrays.
    expect(problems(["--kv-events-encoding", "array", "--extra-engine-args", "a.json"], { "a.json": agentFile })).toEqual([refusal]);
    // The file asks for arrays, the flags turn on state-agent mode.
    expect(problems([...agentFlags, "--extra-engine-args", "b.json"], { "b.json": JSON.stringify({ dynamo: { kv_events_encoding: "array" } }) })).toEqual([refusal]);
    // The file overrides the flag back to maps: accepted.
    const c = load([...agentFlags, "--kv-events-encoding", "array", "--extra-engine-args", "c.json"], { "c.json": JSON.stringify({ dynamo: { kv_events_encoding: "map" } }) });
    expect([c.kvStateAgent, c.kvEventsEncoding]).toEqual([true, "map"]);
  });

  test("`up` refuses it too (state-agent mode is its default), and takes arrays in direct mode", () => {
    expect([...thrownBy(ConfigError, () => upConfigFrom(["--kv-events-encoding", "array"])).problems]).toEqual([refusal]);
    expect(upConfigFrom(["--no-kv-state-agent", "--kv-events-encoding", "array"]).kvEventsEncoding).toBe("array");
  });
});

describe("--extra-engine-args", () => {
  test("overrides flags, and the resolved config turns on state-agent mode like the flag", () => {
    const file = JSON.stringify({
      engine: { block_size: 16, num_gpu_blocks: 128, num_host_blocks: 32, dp_size: 2 },
      dynamo: { kv_state_agent: true, zmq_kv_events_port: 7000, kv_state_agent_raw_host: "10.0.0.5", kv_state_agent_cache_slot: 4 },
    });
    const c = load(["--block-size", "64", "--num-workers", "2", "--extra-engine-args", "a.json"], { "a.json": file });
    expect([c.blockSize, c.numGpuBlocksOverride, c.numHostBlocks, c.dataParallelSize, c.kvStateAgent]).toEqual([16, 128, 32, 2, true]);
    expect(c.zmqKvEventsPorts).toEqual([7000, 7002]);
  });

  test("kv_state_agent in the file without an events port is rejected like the flag", () => {
    const file = JSON.stringify({ engine: { num_host_blocks: 8 }, dynamo: { kv_state_agent: true, kv_state_agent_raw_host: "10.0.0.5", kv_state_agent_cache_slot: 0 } });
    expect(problems(["--extra-engine-args", "a.json"], { "a.json": file })).toEqual([
      "--zmq-kv-events-ports: required with --kv-state-agent (the agent subscribes to each rank's raw PUB)",
    ]);
  });

  test("unknown sections and keys, wrong types and bad JSON are named", () => {
    const file = JSON.stringify({ engine: { block_size: "big", kv_state_agent: true, warp_speed: 9 }, extras: {} });
    expect(problems(["--extra-engine-args", "a.json"], { "a.json": file })).toEqual([
      "engine.kv_state_agent (in a.json): unknown key for the engine section",
      "engine.warp_speed (in a.json): unknown key for the engine section",
      'extras (in a.json): unknown section, expected "engine" or "dynamo"',
      'engine.block_size (in a.json): got "big", expected an integer from 1 to 65536',
    ]);
    expect(problems(["--extra-engine-args", "b.json"], { "b.json": JSON.stringify({ engine: { block_size: "big" } }) })).toEqual([
      'engine.block_size (in b.json): got "big", expected an integer from 1 to 65536',
    ]);
    expect(problems(["--extra-engine-args", "c.json"], { "c.json": "{" })[0]).toStartWith("--extra-engine-args: cannot use c.json:");
    expect(problems(["--extra-engine-args", "d.json"])[0]).toStartWith("--extra-engine-args: cannot use d.json: ENOENT");
  });
});

describe("port plans that clash with themselves", () => {
  test("overlapping rank ranges, raw vs replay, and the HTTP port are named", () => {
    expect(problems(["--num-workers", "2", "--data-parallel-size", "2", "--zmq-kv-events-ports", "32000,32001"])).toEqual([
      "port 32001 is asked for twice: --zmq-kv-events-ports (worker 0 rank 1) and --zmq-kv-events-ports (worker 1 rank 0)",
    ]);
    expect(problems(["--zmq-kv-events-ports", "32000", "--zmq-replay-ports", "32000", "--http-port", "32000"])).toEqual([
      "port 32000 is asked for twice: --http-port and --zmq-kv-events-ports (worker 0 rank 0)",
      "port 32000 is asked for twice: --http-port and --zmq-replay-ports (worker 0 rank 0)",
    ]);
    expect(load(["--num-workers", "3", "--zmq-kv-events-ports", "0,0,0", "--zmq-replay-ports", "0,0,0"]).zmqKvEventsPorts).toEqual([0, 0, 0]);
  });

  test("extra-engine-args base ports expand with the resolved dp size and workers, whatever the key order", () => {
    const a = JSON.stringify({ dynamo: { zmq_kv_events_port: 31000, num_workers: 2 }, engine: { data_parallel_size: 2 } });
    const b = JSON.stringify({ engine: { data_parallel_size: 2 }, dynamo: { num_workers: 2, zmq_kv_events_port: 31000 } });
    for (const file of [a, b]) expect(load(["--extra-engine-args", "x.json"], { "x.json": file }).zmqKvEventsPorts).toEqual([31000, 31002]);
    expect(load(["--extra-engine-args", "z.json"], { "z.json": JSON.stringify({ dynamo: { zmq_kv_events_port: 0, num_workers: 2 } }) }).zmqKvEventsPorts).toEqual([0, 0]);
    expect(problems(["--extra-engine-args", "n.json"], { "n.json": JSON.stringify({ dynamo: { zmq_replay_port: "x" } }) })).toEqual([
      'dynamo.zmq_replay_port (in n.json): got "x", expected a base port from 0 to 65535 (0 = pick)',
    ]);
  });
});

describe("worker API ports", () => {
  test("a base gives worker i port P + i, 0 every worker a free one; a list gives one per worker", () => {
    expect(workerApiPorts(load(["--num-workers", "3", "--openai-port-base", "8100"]))).toEqual([8100, 8101, 8102]);
    expect(workerApiPorts(load(["--num-workers", "2", "--openai-port-base", "0"]))).toEqual([0, 0]);
    expect(workerApiPorts(load(["--num-workers", "2", "--openai-ports", "9000,0"]))).toEqual([9000, 0]);
    expect(workerApiPorts(load([]))).toBeUndefined();
  });

  test("both flags, a list of the wrong length, a base past 65535 and a clash with another port are named", () => {
    expect(problems(["--num-workers", "2", "--openai-port-base", "8100", "--openai-ports", "1,2"])).toEqual(["--openai-ports: give either --openai-port-base or --openai-ports, not both"]);
    expect(problems(["--num-workers", "2", "--openai-ports", "9000"])).toEqual(["--openai-ports: got 1 port(s), expected exactly one per worker (2)"]);
    expect(problems(["--num-workers", "3", "--openai-port-base", "65534"])).toEqual(["--openai-port-base: 65534 + 2 (the last worker) exceeds port 65535"]);
    expect(problems(["--num-workers", "2", "--openai-port-base", "8100", "--http-port", "8101"])).toEqual(["port 8101 is asked for twice: --http-port and --openai-port-base 8100 + 1 (worker 1)"]);
  });
});

describe("mocker discovery settings", () => {
  test("the etcd backend takes its endpoints and a lease TTL in seconds from the flags", () => {
    const c = load(["--discovery-backend", "etcd", "--etcd-endpoints", "http://10.0.0.1:2379,http://10.0.0.2:2379", "--discovery-lease-ttl", "3"]);
    expect([c.discoveryBackend, c.etcdEndpoints, c.discoveryLeaseTtl]).toEqual(["etcd", "http://10.0.0.1:2379,http://10.0.0.2:2379", 3]);
  });

  test("the lease TTL defaults to 10 seconds", () => {
    expect(load([]).discoveryLeaseTtl).toBe(10);
  });

  test("etcd endpoints may come from ETCD_ENDPOINTS", () => {
    const fromEnv = loadConfig(table, { argv: ["--discovery-backend", "etcd"], env: { ETCD_ENDPOINTS: "http://10.0.0.9:2379" } }, (x) => mockerProblems(x as MockerConfig)).config;
    expect(fromEnv.etcdEndpoints).toBe("http://10.0.0.9:2379");
  });

  test("the etcd backend with no endpoints is a problem naming where to give them", () => {
    expect(problems(["--discovery-backend", "etcd"])).toEqual(["--etcd-endpoints (or KVCR_ETCD_ENDPOINTS, ETCD_ENDPOINTS): none given; pass --etcd-endpoints http://HOST:2379[,…] or set ETCD_ENDPOINTS"]);
  });

  test("an etcd endpoint that is not a URL is a problem naming it", () => {
    expect(problems(["--discovery-backend", "etcd", "--etcd-endpoints", "http://a:2379,10.0.0.2:2379"])).toEqual([
      '--etcd-endpoints (or KVCR_ETCD_ENDPOINTS, ETCD_ENDPOINTS): "10.0.0.2:2379" is not a URL; use http://HOST:PORT',
    ]);
  });

  test("an unknown discovery backend is a problem naming the flag", () => {
    expect(problems(["--discovery-backend", "zookeeper"])[0]).toContain("--discovery-backend");
  });

  test("a zero lease TTL is a problem naming the flag", () => {
    expect(problems(["--discovery-lease-ttl", "0"])[0]).toContain("--discovery-lease-ttl");
  });

  test("the etcd member timeout is seconds (3 by default, fractions allowed); zero or over a minute is a problem naming the flag", () => {
    expect(load([]).etcdMemberTimeout).toBe(3);
    expect(load(["--etcd-member-timeout", "1.5"]).etcdMemberTimeout).toBe(1.5);
    expect(problems(["--etcd-member-timeout", "0"])[0]).toContain("--etcd-member-timeout");
    expect(problems(["--etcd-member-timeout", "61"])[0]).toContain("--etcd-member-timeout");
  });
});
