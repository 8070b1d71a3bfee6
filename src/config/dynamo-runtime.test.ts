import { describe, expect, test } from "bun:test";
import { thrownBy } from "../../test/harness.ts";
import { ConfigError } from "../lib/errors.ts";
import { commonOptions } from "./common.ts";
import { dynamoOverlay } from "./dynamo-runtime.ts";
import { loadConfig } from "./load.ts";
import { mockerOptions, mockerProblems } from "./mocker.ts";

const table = { ...mockerOptions, ...commonOptions };
const load = (argv: string[], env: Record<string, string> = {}) =>
  loadConfig(table, { argv, env }, mockerProblems, { overlay: (c, _p, given) => dynamoOverlay(c, given, env) }).config;
const problems = (argv: string[], env: Record<string, string> = {}) => [...thrownBy(ConfigError, () => load(argv, env)).problems];
const DYN = ["--runtime", "dynamo", "--model-path", "/m"];

describe("mocker --runtime dynamo: Dynamo's meaning and defaults", () => {
  test("discovery: DYN_DISCOVERY_BACKEND, else etcd at ETCD_ENDPOINTS or localhost:2379; DYN_FILE_KV, else $TMPDIR/dynamo_store_kv; a flag wins", () => {
    expect(load(DYN)).toMatchObject({ discoveryBackend: "etcd", etcdEndpoints: "http://localhost:2379" });
    expect(load(DYN, { ETCD_ENDPOINTS: "http://10.0.0.1:2379" })).toMatchObject({ discoveryBackend: "etcd", etcdEndpoints: "http://10.0.0.1:2379" });
    expect(load(DYN, { DYN_DISCOVERY_BACKEND: "file", TMPDIR: "/t" })).toMatchObject({ discoveryBackend: "file", discoveryDir: "/t/dynamo_store_kv" });
    expect(load(DYN, { DYN_DISCOVERY_BACKEND: "file", DYN_FILE_KV: "/kv" })).toMatchObject({ discoveryDir: "/kv" });
    expect(load([...DYN, "--discovery-backend", "file", "--discovery-dir", "/d"], { DYN_DISCOVERY_BACKEND: "etcd", DYN_FILE_KV: "/kv" })).toMatchObject({ discoveryBackend: "file", discoveryDir: "/d" });
    // kvcr-mock's own runtime keeps its own defaults.
    expect(load([], { DYN_DISCOVERY_BACKEND: "etcd" })).toMatchObject({ runtime: "kvcr", discoveryBackend: "file" });
  });

  test("the model name defaults to --model-path, as Dynamo's mocker names it", () => {
    expect(load(DYN).modelName).toBe("/m");
    expect(load([...DYN, "--model-name", "x"]).modelName).toBe("x");
  });

  test("bad input is named: no --model-path, an endpoint in another namespace, NATS planes, Dynamo flags without the runtime", () => {
    expect(problems(["--runtime", "dynamo"]).join("\n")).toContain("--model-path: required with --runtime dynamo");
    expect(problems([...DYN, "--endpoint", "dyn://other.backend.generate"]).join("\n")).toContain('its namespace "other" differs from --namespace');
    expect(problems([...DYN, "--endpoint", "backend.generate"]).join("\n")).toContain("expected dyn://NAMESPACE.COMPONENT.ENDPOINT");
    expect(problems([...DYN, "--request-plane", "nats"]).join("\n")).toContain("the NATS request plane is not supported: use tcp");
    expect(problems(DYN, { DYN_EVENT_PLANE: "nats" }).join("\n")).toContain("the NATS event plane is not supported: use zmq");
    expect(problems(["--model-path", "/m"]).join("\n")).toContain("--model-path: only with --runtime dynamo");
    expect(problems(DYN, { DYN_DISCOVERY_BACKEND: "kubernetes" }).join("\n")).toContain("DYN_DISCOVERY_BACKEND");
    expect(problems([...DYN, "--bootstrap-ports", "0"]).join("\n")).toContain("--bootstrap-ports: a prefill worker's setting (decode workers dial it), contradicts --disaggregation-mode agg");
    expect(problems([...DYN, "--disaggregation-mode", "prefill", "--num-workers", "2", "--bootstrap-ports", "0"]).join("\n")).toContain("--bootstrap-ports: got 1 port(s), expected exactly one per worker (2)");
    expect(problems([...DYN, "--disaggregation-mode", "prefill", "--num-workers", "2", "--bootstrap-ports", "7000,7000"]).join("\n")).toContain("port 7000 is asked for twice: --bootstrap-ports (worker 0) and --bootstrap-ports (worker 1)");
    expect(problems(["--bootstrap-ports", "7000"]).join("\n")).toContain("--bootstrap-ports: only with --runtime dynamo");
    // KVCR mode takes the flags it always takes; raw streams without it are refused.
    expect(problems([...DYN, "--kv-state-agent"]).join("\n")).toContain("--zmq-kv-events-ports: required with --kv-state-agent");
    expect(problems([...DYN, "--zmq-kv-events-ports", "0"]).join("\n")).toContain("--zmq-kv-events-ports without --kv-state-agent: not supported with --runtime dynamo yet");
  });

  test("prefill and decode workers are Dynamo's: --disaggregation-mode is accepted, a prefill worker with its bootstrap ports", () => {
    expect(load([...DYN, "--disaggregation-mode", "prefill", "--num-workers", "2", "--bootstrap-ports", "0,0"]).disaggregationMode).toBe("prefill");
    expect(load([...DYN, "--disaggregation-mode", "decode"]).disaggregationMode).toBe("decode");
    expect(load([...DYN, "--disaggregation-mode", "prefill", "--num-workers", "2", "--bootstrap-ports", "7001,7002"]).bootstrapPorts).toEqual([7001, 7002]);
    expect(load([...DYN, "--lora-modules", "sql=/adapters/sql"]).loraModules).toBe("sql=/adapters/sql");
  });
});
