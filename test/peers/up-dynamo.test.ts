// The seed's scenario from one command (peers environment): `up --config examples/dynamo-kvcr.yaml`
// starts Dynamo's own state agent, kvcr-mock mockers in KVCR mode and Dynamo's own frontend, each
// gated on its readiness; the stack serves and routes on the agent's events, and stops leaving no
// process and no file. The aggregated example serves its demo; a Python without Dynamo is named.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CLI_ENTRY, makeTempDir, pipeOutput, spawnChild, waitFor, withTimeout } from "../harness.ts";
import { PEERS_PYTHON, peersAvailable } from "../peers.ts";

const EXAMPLES = join(import.meta.dir, "../../examples");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.if(peersAvailable())("up in a Dynamo deployment (peers environment)", () => {
  test("examples/dynamo-kvcr.yaml: Dynamo's agent and frontend around kvcr-mock mockers, routed on the agent's events, stopped clean", async () => {
    await using tmp = await makeTempDir("kvcr-up-dyn-");
    const stateFile = join(tmp.path, "state.json");
    await using up = spawnChild([process.execPath, CLI_ENTRY, "up", "--config", join(EXAMPLES, "dynamo-kvcr.yaml"), "--http-port", "0", "--state-file", stateFile, "--grace-period", "5"], {
      env: { TMPDIR: tmp.path, KVCR_PEERS_PYTHON: PEERS_PYTHON! },
    });
    let out = "";
    pipeOutput(up, (t) => (out += t));
    await waitFor(() => existsSync(stateFile), { what: `the stack to be ready (its output:\n${out.slice(-3000)})`, timeoutMs: 90_000 });
    const state = JSON.parse(readFileSync(stateFile, "utf8")) as { frontend_url: string; discovery_dir: string; processes: { name: string; pid: number; external: boolean }[] };
    expect(state.processes.map((p) => [p.name, p.external])).toEqual([["agent", true], ["mocker-0", false], ["frontend", true]]);
    const ask = async () => {
      const res = await fetch(`${state.frontend_url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock-model", messages: [{ role: "user", content: "Route me to my cache, ".repeat(30) }], max_tokens: 2 }) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } }).usage;
    };
    const stored = async () => (await (await fetch(`${state.frontend_url}/metrics`)).text()).split("\n").filter((l) => l.startsWith("dynamo_component_kv_cache_events_applied{") && l.includes('event_type="stored"') && l.includes('status="ok"')).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    const first = await ask();
    expect(first.prompt_tokens_details?.cached_tokens ?? 0).toBeLessThanOrEqual(16);
    await waitFor(async () => (await stored()) > 0, { what: "Dynamo's router to apply the agent's events", timeoutMs: 10_000 });
    // Dynamo's router withholds KV routing while it reconciles the sources it has just found: the
    // repeat lands on its holder once that is done.
    await waitFor(async () => {
      const again = await ask();
      return (again.prompt_tokens_details?.cached_tokens ?? 0) >= again.prompt_tokens - 16;
    }, { what: "the repeat to be routed to its holder (found cached)", timeoutMs: 30_000 });
    up.proc.kill("SIGTERM");
    expect(await withTimeout(up.proc.exited, 30_000, "up to stop")).toBe(0);
    for (const p of state.processes) expect(alive(p.pid), `${p.name} (pid ${p.pid}) still running`).toBe(false);
    // Nothing of the stack is left in its temp dir, nor its own discovery directory (Dynamo's roles' records in it).
    expect(readdirSync(tmp.path).filter((f) => f !== "state.json")).toEqual([]);
    expect(existsSync(state.discovery_dir), state.discovery_dir).toBe(false);
  }, 150_000);

  test("examples/dynamo-agg.yaml and dynamo-mocker.yaml (Dynamo's own mocker) serve the demo (the repeat from the KV cache); a Python without Dynamo is named with what it needs", async () => {
    await using tmp = await makeTempDir("kvcr-up-dyn-");
    {
      await using up = spawnChild([process.execPath, CLI_ENTRY, "up", "--config", join(EXAMPLES, "dynamo-agg.yaml"), "--http-port", "0", "--demo"], { env: { TMPDIR: tmp.path, KVCR_PEERS_PYTHON: PEERS_PYTHON! } });
      let out = "";
      pipeOutput(up, (t) => (out += t));
      expect(await withTimeout(up.proc.exited, 90_000, "the demo"), out.slice(-3000)).toBe(0);
      const cached = [...out.matchAll(/prompt (\d+) tokens, (\d+) of them served from the KV cache/g)].map((m) => [Number(m[1]), Number(m[2])]);
      expect(cached.length).toBe(2);
      const [prompt, hit] = cached[1]!;
      expect(hit!).toBeGreaterThanOrEqual(prompt! - 16);
    }
    {
      // Dynamo's own mocker in kvcr-mock's place: the same demo, its streams carrying text (model-files' words), the settings through {engine_args}.
      await using up = spawnChild([process.execPath, CLI_ENTRY, "up", "--config", join(EXAMPLES, "dynamo-mocker.yaml"), "--http-port", "0", "--demo"], { env: { TMPDIR: tmp.path, KVCR_PEERS_PYTHON: PEERS_PYTHON! } });
      let out = "";
      pipeOutput(up, (t) => (out += t));
      expect(await withTimeout(up.proc.exited, 90_000, "the demo"), out.slice(-3000)).toBe(0);
      // Dynamo's mocker logs its launch and the engine config it built from {engine_args}.
      expect(out).toContain("Launching 4 mocker worker(s)");
      expect(out).toContain("block_size: 16, max_model_len: Some(131072), max_num_seqs: 256, max_num_batched_tokens: 8192");
      const cached = [...out.matchAll(/prompt (\d+) tokens, (\d+) of them served from the KV cache/g)].map((m) => [Number(m[1]), Number(m[2])]);
      expect(cached.length).toBe(2);
      const [prompt, hit] = cached[1]!;
      // Dynamo's mocker caches whole blocks of the stack's block size (16), not its own default (64).
      expect(hit! % 16).toBe(0);
      expect(hit!).toBeGreaterThanOrEqual(prompt! - 16);
    }
    // The two example files differ only in whose mocker runs.
    const body = (f: string) => readFileSync(join(EXAMPLES, f), "utf8").split("\n").filter((l) => !l.startsWith("#"));
    expect(body("dynamo-mocker.yaml").filter((l) => !body("dynamo-agg.yaml").includes(l))).toEqual([
      "  mocker_cmd: >-",
      "    {peers_python} -m dynamo.mocker --model-path {model_path} --model-name {model} --num-workers {workers}",
      "    --endpoint dyn://{namespace}.backend.generate --discovery-backend {discovery_backend} --request-plane tcp --event-plane zmq {engine_args}",
    ]);
    {
      await using up = spawnChild([process.execPath, CLI_ENTRY, "up", "--config", join(EXAMPLES, "dynamo-kvcr.yaml"), "--http-port", "0", "--peers-python", process.execPath], { env: { TMPDIR: tmp.path } });
      let out = "";
      pipeOutput(up, (t) => (out += t));
      expect(await withTimeout(up.proc.exited, 30_000, "up")).toBe(2);
      expect(out).toContain(`--peers-python ${process.execPath}: cannot import Dynamo's state agent and frontend`);
      expect(out).toContain("it needs ai-dynamo==1.6.1 and ai-dynamo-runtime==1.6.1");
    }
    expect(readdirSync(tmp.path)).toEqual([]);
  }, 150_000);
});
