// `up --runtime dynamo`, planned (pure): Dynamo's own state agent and frontend from its commands
// with the peers Python, kvcr-mock mockers with --runtime dynamo, each role told the deployment
// through its environment, gated on what Dynamo's processes serve; what Dynamo cannot take refused.
import { describe, expect, test } from "bun:test";
import { commonOptions } from "../../config/common.ts";
import { loadConfig } from "../../config/load.ts";
import { mockerOptions } from "../../config/mocker.ts";
import { upOptions, upProblems, type UpConfig } from "../../config/up.ts";
import { ConfigError } from "../../lib/errors.ts";
import { thrownBy } from "../../../test/harness.ts";
import { plan, type PlanContext } from "./plan.ts";
import { LIFELINE_WATCH } from "./template.ts";

const table = { ...upOptions, ...commonOptions };
const up = (...argv: string[]): UpConfig => loadConfig(table, { argv, env: {} }, upProblems).config;
const dynamo = { peersPython: "/venv/bin/python", modelPath: "/m", tmpDir: "/t" };
const ctx: PlanContext = { self: ["/bin/kvcr"], ports: { agent: 9091, frontend: 8000, mockers: [7000] }, discoveryDir: "/d", dynamo };
const mockerConfigOf = (argv: string[]) => loadConfig({ ...mockerOptions, ...commonOptions }, { argv: argv.slice(2), env: {} }).config;

describe("up --runtime dynamo", () => {
  test("a frontend command naming the workers' own API URLs is refused: Dynamo's workers have none", () => {
    expect(thrownBy(ConfigError, () => plan(up("--runtime", "dynamo", "--frontend-cmd", "r {worker_api_urls_csv}"), ctx)).problems).toEqual(["--frontend-cmd: the workers' URLs with --runtime dynamo: Dynamo's workers serve its request plane, not an API of their own"]);
  });

  test("Dynamo's agent and frontend run with the peers Python; the mockers are kvcr-mock's under Dynamo's runtime", () => {
    const p = plan(up("--runtime", "dynamo", "--workers-per-process", "4", "--namespace", "ns"), ctx);
    const [agent, mocker, frontend] = p.processes;
    expect(agent!.argv).toEqual(["/bin/sh", "-c", `${LIFELINE_WATCH}exec /venv/bin/python -m dynamo.kv_state_agent --max-slots 8`]);
    expect(frontend!.argv).toEqual(["/bin/sh", "-c", `${LIFELINE_WATCH}exec /venv/bin/python -m dynamo.frontend --http-host 127.0.0.1 --http-port 8000 --namespace ns --router-mode kv --discovery-backend file --request-plane tcp --event-plane zmq`]);
    expect([agent!.external, frontend!.external, mocker!.external]).toEqual([true, true, false]);
    const m = mockerConfigOf(mocker!.argv);
    expect(m).toMatchObject({ runtime: "dynamo", modelPath: "/m", kvStateAgent: true, numWorkers: 4, admin: false, kvStateAgentRawHost: "127.0.0.1", kvStateAgentCacheSlot: 0 });
    expect(m.zmqKvEventsPorts).toEqual([0, 0, 0, 0]);
    // Every role is told the deployment; Dynamo's agent and our mockers serve /live and /health on DYN_SYSTEM_PORT.
    const env = { DYN_NAMESPACE: "ns", DYN_DISCOVERY_BACKEND: "file", DYN_FILE_KV: "/d", DYN_REQUEST_PLANE: "tcp", DYN_EVENT_PLANE: "zmq", DYN_TCP_RPC_HOST: "127.0.0.1", TMPDIR: "/t", HF_HUB_OFFLINE: "1" };
    expect(agent!.env).toMatchObject({ ...env, DYN_SYSTEM_PORT: "9091" });
    expect(mocker!.env).toMatchObject({ ...env, DYN_SYSTEM_PORT: "7000" });
    expect(frontend!.env).toMatchObject(env);
    expect([agent!.readiness, mocker!.readiness]).toEqual([{ kind: "ok", url: "http://127.0.0.1:9091/live" }, { kind: "ok", url: "http://127.0.0.1:7000/health" }]);
    expect(frontend!.readiness).toEqual({ kind: "frontend", modelsUrl: "http://127.0.0.1:8000/v1/models", healthUrl: "http://127.0.0.1:8000/health", model: "mock-model", workers: 4 });
    // Our mockers find Dynamo's host themselves: up does not wait for a kvcr-mock agent record.
    expect(plan(up("--runtime", "dynamo", "--roles", "mockers"), ctx).awaitAgentRecord).toBe(false);
  });

  test("direct mode: no agent, mockers publish on Dynamo's event plane (no raw streams); given commands keep their placeholders", () => {
    const p = plan(up("--runtime", "dynamo", "--no-kv-state-agent", "--frontend-cmd", "{peers_python} -m dynamo.frontend --http-port {port}"), ctx);
    expect(p.processes.map((s) => s.name)).toEqual(["mocker-0", "frontend"]);
    expect(mockerConfigOf(p.processes[0]!.argv)).toMatchObject({ runtime: "dynamo", kvStateAgent: false, zmqKvEventsPorts: undefined });
    expect(p.processes[1]!.argv).toEqual(["/bin/sh", "-c", `${LIFELINE_WATCH}exec /venv/bin/python -m dynamo.frontend --http-port 8000`]);
  });

  test("Dynamo's own mocker as --mocker-cmd: {engine_args} carries the stack's engine settings, every shared flag; /health reports its endpoints", () => {
    const cmd = "{peers_python} -m dynamo.mocker --model-path {model_path} --num-workers {workers} --endpoint dyn://{namespace}.backend.generate {engine_args}";
    const p = plan(up("--runtime", "dynamo", "--no-kv-state-agent", "--workers-per-process", "2", "--block-size", "16", "--speedup-ratio", "10", "--no-enable-chunked-prefill", "--mocker-cmd", cmd), ctx);
    const mocker = p.processes[0]!;
    expect(mocker.external).toBe(true);
    expect(mocker.argv[2]).toBe(
      `${LIFELINE_WATCH}exec /venv/bin/python -m dynamo.mocker --model-path /m --num-workers 2 --endpoint dyn://dynamo.backend.generate ` +
        "--block-size=16 --num-gpu-blocks-override=16384 --max-num-seqs=256 --max-num-batched-tokens=8192 --enable-prefix-caching --no-enable-chunked-prefill " +
        "--preemption-mode=lifo --speedup-ratio=10 --decode-speedup-ratio=1 --data-parallel-size=1 --num-host-blocks=4096 --host-offload-d2h-bandwidth-gbps=0 " +
        "--host-offload-h2d-bandwidth-gbps=0 --kv-bytes-per-token=131072 --max-model-len=131072",
    );
    // Dynamo's mocker reports ready on /health only with its endpoints named; it binds the stack's host.
    // Without a host tier its flags are left out: Dynamo's mocker refuses --num-host-blocks 0.
    const noHost = plan(up("--runtime", "dynamo", "--no-kv-state-agent", "--num-host-blocks", "0", "--mocker-cmd", cmd), ctx).processes[0]!.argv[2]!;
    expect(noHost).toContain("--preemption-mode=lifo --speedup-ratio=1 --decode-speedup-ratio=1 --data-parallel-size=1 --kv-bytes-per-token=131072");
    expect(noHost).not.toContain("host");
    expect(mocker.env).toMatchObject({ DYN_SYSTEM_PORT: "7000", DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS: '["generate"]', DYN_SYSTEM_HOST: "127.0.0.1" });
    expect(mocker.readiness).toEqual({ kind: "ok", url: "http://127.0.0.1:7000/health" });
    // A setting Dynamo's mocker has no flag for is named, not dropped; without {engine_args} it is the command's business.
    expect(thrownBy(ConfigError, () => plan(up("--runtime", "dynamo", "--timing-model", "fixed", "--mocker-cmd", cmd), ctx)).problems).toEqual([
      "--mocker-cmd: {engine_args}: --timing-model fixed has no counterpart in Dynamo's mocker (leave it at its default, polynomial, to compare the two)",
    ]);
    expect(plan(up("--runtime", "dynamo", "--timing-model", "fixed", "--mocker-cmd", "m {port}"), ctx).processes[1]!.argv[2]).toEndWith("exec m 7000");
  });

  test("what a Dynamo deployment cannot take is refused by name, and Dynamo's flags without it", () => {
    const problems = (...argv: string[]) => [...thrownBy(ConfigError, () => up(...argv)).problems];
    expect(problems("--runtime", "dynamo", "--worker-api", "--audit")).toEqual([
      "--worker-api: not with --runtime dynamo (Dynamo's workers serve its request plane, not an API of their own)",
      "--audit: not with --runtime dynamo (it reads kvcr-mock's own frontend index)",
    ]);
    expect(problems("--model-path", "/m")).toEqual(["--model-path: only with --runtime dynamo"]);
    // KVCR_PEERS_PYTHON is a developer's standing setting: harmless without the runtime.
    expect(up("--peers-python", "/p").peersPython).toBe("/p");
    expect(() => plan(up("--runtime", "dynamo"), { ...ctx, dynamo: undefined })).toThrow("--runtime dynamo: no Python for Dynamo's roles");
  });
});
