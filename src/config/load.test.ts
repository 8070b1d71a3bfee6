import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { commonOptions } from "./common.ts";
import { loadConfig } from "./load.ts";
import { defineOptions } from "./options.ts";

const table = defineOptions({
  ...commonOptions,
  blockSize: { kind: "int", min: 1, default: 64, env: "KVCR_TEST_BLOCK_SIZE", description: "tokens per block" },
  speedupRatio: { kind: "number", min: 0, default: 1, description: "speedup" },
  modelName: { kind: "string", nonEmpty: true, default: "mock-model", description: "model" },
  enablePrefixCaching: { kind: "bool", default: true, description: "prefix caching" },
  preemptionMode: { kind: "enum", choices: ["lifo", "fifo"], default: "lifo", description: "preemption" },
  zmqKvEventsPorts: { kind: "intList", min: 0, max: 65535, description: "ports" },
  numHostBlocks: { kind: "int", min: 0, description: "host blocks" },
});

const problemsOf = (fn: () => unknown): string[] => [...thrownBy(ConfigError, fn).problems];

const files = (map: Record<string, string>) => (p: string) => {
  const text = map[p];
  if (text === undefined) throw new Error(`ENOENT: no such file '${p}'`);
  return text;
};

describe("loadConfig precedence: flag > env > file > default", () => {
  test("defaults when nothing is given", () => {
    const { config } = loadConfig(table, { argv: [] });
    expect(config.blockSize).toBe(64);
    expect(config.enablePrefixCaching).toBe(true);
    expect(config.numHostBlocks).toBeUndefined();
    expect(config.logLevel).toBe("info");
  });

  test("file < env < flag", () => {
    const readFile = files({ "s.yaml": "block_size: 16\nspeedup-ratio: 2.5\nmodel_name: from-file\n" });
    const fileOnly = loadConfig(table, { argv: ["--config", "s.yaml"], readFile }).config;
    expect([fileOnly.blockSize, fileOnly.speedupRatio, fileOnly.modelName]).toEqual([16, 2.5, "from-file"]);
    const env = { KVCR_TEST_BLOCK_SIZE: "32" };
    expect(loadConfig(table, { argv: ["--config", "s.yaml"], env, readFile }).config.blockSize).toBe(32);
    expect(loadConfig(table, { argv: ["--config", "s.yaml", "--block-size=8"], env, readFile }).config.blockSize).toBe(8);
  });

  test("every option reads KVCR_ + its flag in UPPER_SNAKE: flag > env > file > default", () => {
    const readFile = files({ "s.yaml": "speedup_ratio: 2\nmodel_name: from-file\nenable_prefix_caching: true\npreemption_mode: fifo\n" });
    const env = { KVCR_SPEEDUP_RATIO: "3", KVCR_ENABLE_PREFIX_CACHING: "false", KVCR_ZMQ_KV_EVENTS_PORTS: "5557,5558", KVCR_PREEMPTION_MODE: "lifo" };
    const withEnv = loadConfig(table, { argv: ["--config", "s.yaml"], env, readFile }).config;
    expect([withEnv.speedupRatio, withEnv.modelName, withEnv.enablePrefixCaching, withEnv.zmqKvEventsPorts, withEnv.preemptionMode]).toEqual([
      3,
      "from-file",
      false,
      [5557, 5558],
      "lifo",
    ]);
    const withFlags = loadConfig(table, { argv: ["--config", "s.yaml", "--speedup-ratio", "4", "--enable-prefix-caching"], env, readFile }).config;
    expect([withFlags.speedupRatio, withFlags.enablePrefixCaching]).toEqual([4, true]);
    expect(loadConfig(table, { argv: [], env: { KVCR_NUM_HOST_BLOCKS: "8" } }).config.numHostBlocks).toBe(8);
    // An empty variable counts as unset.
    expect(loadConfig(table, { argv: [], env: { KVCR_SPEEDUP_RATIO: "" } }).config.speedupRatio).toBe(1);
  });

  describe("an option with its own env alias (DYN_*)", () => {
    const aliased = defineOptions({ namespace: { kind: "string", default: "dynamo", env: "DYN_NAMESPACE", description: "ns" } });

    test("the alias is read", () => {
      expect(loadConfig(aliased, { argv: [], env: { DYN_NAMESPACE: "a" } }).config.namespace).toBe("a");
    });

    test("the KVCR_ name wins over the alias", () => {
      expect(loadConfig(aliased, { argv: [], env: { DYN_NAMESPACE: "a", KVCR_NAMESPACE: "b" } }).config.namespace).toBe("b");
    });

    test("the flag wins over both env names", () => {
      expect(loadConfig(aliased, { argv: ["--namespace", "c"], env: { DYN_NAMESPACE: "a", KVCR_NAMESPACE: "b" } }).config.namespace).toBe("c");
    });
  });

  test("a .json config file named by KVCR_CONFIG is read as JSON", () => {
    const readFile = files({ "c.json": '{"blockSize": 4, "zmq_kv_events_ports": [5557, 5558]}' });
    const { config } = loadConfig(table, { argv: [], env: { KVCR_CONFIG: "c.json" }, readFile });
    expect(config.blockSize).toBe(4);
    expect(config.zmqKvEventsPorts).toEqual([5557, 5558]);
  });

  test("booleans, negation, lists, rest after --", () => {
    const r = loadConfig(
      table,
      { argv: ["--no-enable-prefix-caching", "--zmq-kv-events-ports", "1,2", "--zmq-kv-events-ports", "3", "--", "echo", "--x"] },
      undefined,
    );
    expect(r.config.enablePrefixCaching).toBe(false);
    expect(r.config.zmqKvEventsPorts).toEqual([1, 2, 3]);
    expect(r.rest).toEqual(["echo", "--x"]);
    expect(loadConfig(table, { argv: ["--enable-prefix-caching=false"] }).config.enablePrefixCaching).toBe(false);
  });
});

describe("loadConfig failures: one line per problem naming key, value and what is allowed", () => {
  test("bad flag values", () => {
    expect(problemsOf(() => loadConfig(table, { argv: ["--block-size", "abc", "--speedup-ratio", "-1", "--preemption-mode", "lru"] }))).toEqual([
      '--block-size: got "abc", expected an integer ≥ 1',
      "--speedup-ratio: got -1, expected a number ≥ 0",
      '--preemption-mode: got "lru", expected one of lifo, fifo',
    ]);
  });

  test("non-integer and out-of-range list items", () => {
    expect(problemsOf(() => loadConfig(table, { argv: ["--block-size", "1.5", "--zmq-kv-events-ports", "1,x"] }))).toEqual([
      "--block-size: got 1.5, expected an integer ≥ 1",
      '--zmq-kv-events-ports: got "1,x", expected a list of integers from 0 to 65535 (comma-separated on the command line)',
    ]);
  });

  test("unknown flag, missing value, stray argument", () => {
    expect(problemsOf(() => loadConfig(table, { argv: ["--bogus", "1", "--model-name"] }))).toEqual([
      "--bogus: unknown flag (see --help for the flags this command takes)",
      "--model-name: missing value, expected a non-empty string",
    ]);
    expect(problemsOf(() => loadConfig(table, { argv: ["stray", "--block-size", "4"] }))).toEqual(['unexpected argument "stray" (this command takes only --flags)']);
  });

  test("bad environment value names the variable", () => {
    expect(problemsOf(() => loadConfig(table, { argv: [], env: { KVCR_TEST_BLOCK_SIZE: "0", KVCR_LOG_LEVEL: "loud", KVCR_ENABLE_PREFIX_CACHING: "maybe" } }))).toEqual([
      'KVCR_LOG_LEVEL (environment): got "loud", expected one of silent, error, warn, info, debug, trace',
      "KVCR_TEST_BLOCK_SIZE (environment): got 0, expected an integer ≥ 1",
      'KVCR_ENABLE_PREFIX_CACHING (environment): got "maybe", expected true or false',
    ]);
  });

  test("config file: unknown keys, wrong types, flag-only keys", () => {
    const readFile = files({ "s.yaml": "block_size: '64'\nnum_gpu_blocks: 3\nconfig: other.yaml\n" });
    expect(problemsOf(() => loadConfig(table, { argv: ["--config", "s.yaml"], readFile }))).toEqual([
      "num_gpu_blocks (in s.yaml): unknown key for this command",
      "config (in s.yaml): unknown key for this command",
      'block_size (in s.yaml): got "64", expected an integer ≥ 1',
    ]);
  });

  test("config file: unreadable, unparsable, not a mapping", () => {
    expect(problemsOf(() => loadConfig(table, { argv: ["--config", "missing.yaml"], readFile: files({}) }))[0]).toStartWith(
      "--config: cannot read missing.yaml: ENOENT",
    );
    expect(problemsOf(() => loadConfig(table, { argv: ["--config", "b.json"], readFile: files({ "b.json": "{nope" }) }))[0]).toStartWith(
      "--config: b.json is not valid JSON:",
    );
    // The parser's whole message (line, column and the code frame), not just its first line.
    const yaml = problemsOf(() => loadConfig(table, { argv: ["--config", "b.yaml"], readFile: files({ "b.yaml": "block_size: 4\n  bad: [\n" }) }))[0]!;
    expect(yaml).toStartWith("--config: b.yaml is not valid YAML:");
    expect(yaml).toContain("line 1, column 13");
    expect(yaml).toContain("block_size: 4\n");
    expect(yaml.split("\n").length).toBeGreaterThan(2);
    expect(problemsOf(() => loadConfig(table, { argv: ["--config", "l.yaml"], readFile: files({ "l.yaml": "- 1\n- 2\n" }) }))).toEqual([
      "--config: l.yaml must hold a mapping of option names to values, got a list",
    ]);
  });

  test("cross-field refinement runs only on otherwise valid config", () => {
    const refine = (c: { numHostBlocks: number | undefined; enablePrefixCaching: boolean }) =>
      c.numHostBlocks !== undefined && !c.enablePrefixCaching ? ["--num-host-blocks: requires prefix caching"] : [];
    expect(problemsOf(() => loadConfig(table, { argv: ["--num-host-blocks", "8", "--no-enable-prefix-caching"] }, refine))).toEqual([
      "--num-host-blocks: requires prefix caching",
    ]);
    expect(problemsOf(() => loadConfig(table, { argv: ["--num-host-blocks", "x", "--no-enable-prefix-caching"] }, refine))).toEqual([
      '--num-host-blocks: got "x", expected an integer ≥ 0',
    ]);
  });
});

describe("loadConfig: keys and values that only look valid", () => {
  test("prototype names in a config file are unknown keys", () => {
    const readFile = files({ "p.json": '{"constructor": 1, "toString": 2, "hasOwnProperty": 3}' });
    expect(problemsOf(() => loadConfig(table, { argv: ["--config", "p.json"], readFile }))).toEqual([
      "constructor (in p.json): unknown key for this command",
      "toString (in p.json): unknown key for this command",
      "hasOwnProperty (in p.json): unknown key for this command",
    ]);
    expect(problemsOf(() => loadConfig(table, { argv: ["--constructor=1"] }))).toEqual(["--constructor: unknown flag (see --help for the flags this command takes)"]);
  });

  test("a bad file value is reported even when a flag overrides it", () => {
    const readFile = files({ "s.yaml": "block_size: -4\n" });
    expect(problemsOf(() => loadConfig(table, { argv: ["--config", "s.yaml", "--block-size", "8"], readFile }))).toEqual([
      "block_size (in s.yaml): got -4, expected an integer ≥ 1",
    ]);
  });

  test("non-finite numbers are named as such", () => {
    expect(problemsOf(() => loadConfig(table, { argv: ["--speedup-ratio", "1e999"] }))).toEqual(["--speedup-ratio: got Infinity, expected a number ≥ 0"]);
  });
});

describe("loadConfig: a sectioned config file (up's stack file)", () => {
  const sections = { stack: ["modelName", "logLevel"], mocker: ["blockSize", "zmqKvEventsPorts"] } as const;
  test("keys come from their sections, under any spelling", () => {
    const readFile = files({ "s.yaml": "stack:\n  model_name: m\nmocker:\n  block-size: 16\n  zmqKvEventsPorts: [1]\n" });
    const { config } = loadConfig(table, { argv: ["--config", "s.yaml"], readFile }, undefined, { sections });
    expect([config.modelName, config.blockSize, config.zmqKvEventsPorts]).toEqual(["m", 16, [1]]);
  });

  test("unknown sections, keys outside their section and bad values: one line each", () => {
    const readFile = files({ "s.yaml": "stack:\n  block_size: 16\nmocker:\n  block_size: 0\n  nope: 1\nagent: {}\nfrontend: 3\n" });
    const problems = problemsOf(() => loadConfig(table, { argv: ["--config", "s.yaml"], readFile }, undefined, { sections: { ...sections, frontend: [] } }));
    expect(problems).toEqual([
      "stack.block_size (in s.yaml): unknown key for the stack section",
      "mocker.nope (in s.yaml): unknown key for the mocker section",
      "agent (in s.yaml): unknown section, expected one of stack, mocker, frontend",
      "frontend (in s.yaml): must be a mapping of option names to values",
      "mocker.block_size (in s.yaml): got 0, expected an integer ≥ 1",
    ]);
  });
});
