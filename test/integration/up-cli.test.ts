// `kvcr-mock up` as a user runs it, from source: the real mocker plus fake agent/frontend commands
// (test/fixtures/fake-role.ts) through --agent-cmd/--frontend-cmd. Readiness gates, `-- CMD`,
// --state-file, prefixed output, --log-dir, every failure path and the no-orphan guarantee.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import { allGone, CLI_ENTRY, FIXTURES_DIR, pidAlive, runCli, spawnProcess, tempDir, waitFor, type ChildProcess } from "../harness.ts";

const FAKE = `${process.execPath} ${join(FIXTURES_DIR, "fake-role.ts")}`;
const up = (args: string[]) => spawnProcess([process.execPath, CLI_ENTRY, "up", ...args]);

let dir: ReturnType<typeof tempDir>;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  dir?.[Symbol.dispose]();
});

/** A small stack on picked ports, in its own discovery dir; `extra` adds or overrides flags. */
function stackArgs(extra: string[] = []): string[] {
  dir = tempDir("kvcr-up-");
  return [
    "--discovery-dir", join(dir.path, "discovery"),
    "--agent-port", "0",
    "--http-port", "0",
    "--workers-per-process", "2",
    "--num-gpu-blocks-override", "256",
    "--agent-cmd", `${FAKE} --port {port} --argv-file ${join(dir.path, "agent.json")}`,
    "--frontend-cmd", `${FAKE} --port {port} --workers {workers} --model {model}`,
    "--state-file", join(dir.path, "state.json"),
    "--grace-period", "5",
    ...extra,
  ];
}

interface State {
  pid: number;
  namespace: string;
  discovery_dir: string;
  frontend_url: string;
  agent_url: string | null;
  processes: { name: string; pid: number; url: string; ports: Record<string, number | number[]>; raw_endpoints?: string[][] }[];
}
const readState = (): State => JSON.parse(readFileSync(join(dir.path, "state.json"), "utf8")) as State;

async function started(args: string[]): Promise<{ child: ChildProcess; state: State }> {
  const child = up(args);
  cleanups.push(async () => void (await child[Symbol.asyncDispose]()));
  await child.readLine((l) => l.startsWith("kvcr-mock stack ready"), 30_000);
  const state = readState();
  // Should `up` fail to stop a child, the test fails and still leaves no process behind.
  cleanups.push(async () => {
    for (const p of state.processes) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
  });
  return { child, state };
}

/** A pid whose process has exited (what a SIGKILLed up leaves in its state file). */
async function goneProcess(): Promise<{ pid: number }> {
  await using child = spawnProcess(["true"]);
  await child.proc.exited;
  return { pid: child.proc.pid };
}

describe("kvcr-mock up", () => {
  test("a state-agent stack comes up in order, reports itself, and stops whole on SIGINT with exit 0", async () => {
    const args = stackArgs(["--mocker-processes", "2"]);
    const { child, state } = await started([...args, "--log-dir", join(dir.path, "logs")]);
    expect(state.processes.map((p) => p.name)).toEqual(["agent", "mocker-0", "mocker-1", "frontend"]);
    // The agent command was templated with its port, and given the lifeline.
    const agent = JSON.parse(readFileSync(join(dir.path, "agent.json"), "utf8")) as { argv: string[]; lifeline: string };
    expect(agent.argv.slice(0, 2)).toEqual(["--port", new URL(state.agent_url!).port]);
    expect(agent.lifeline).toBe("stdin");
    // Each mocker: healthy, its two workers' raw endpoints from discovery, disjoint CacheOwner ordinals.
    for (const m of state.processes.filter((p) => p.name.startsWith("mocker"))) {
      expect((await fetch(`${m.url}/health`)).status).toBe(200);
      expect(m.raw_endpoints?.flat()).toHaveLength(2);
      // The raw ports each mocker picked, as bound (not the 0 it was given).
      expect(m.ports.zmqKvEvents).toEqual(m.raw_endpoints!.map((e) => Number(new URL(e[0]!.replace("tcp:", "http:")).port)));
      expect((m.ports.zmqKvEvents as number[]).every((port) => port > 0)).toBe(true);
    }
    // A whole stack with no --namespace runs in its own, from the frontend port it picked; the given dir as given.
    expect(state.namespace).toBe(`dynamo-${new URL(state.frontend_url).port}`);
    expect(state.discovery_dir).toBe(join(dir.path, "discovery"));
    await using store = await openFileDiscoveryStore({ dir: join(dir.path, "discovery") });
    const intents = await store.list(keys.kindPrefix(state.namespace, "intent"));
    expect(intents.map((e) => (e.value as { cache_owner_id: string }).cache_owner_id.slice(-2)).sort()).toEqual(["00", "01", "02", "03"]);
    const out = child.stdoutText();
    expect(out).toContain(`namespace ${state.namespace})`);
    expect(out).toContain(`frontend  ${state.frontend_url}`);
    expect(out).toContain(`curl -s ${state.frontend_url}/v1/chat/completions`);
    expect(child.stderrText()).toMatch(/^mocker-1 \| .*all 2 worker\(s\) registered$/m);
    expect(readFileSync(join(dir.path, "logs", "mocker-0.log"), "utf8")).toContain("all 2 worker(s) registered");

    child.proc.kill("SIGINT");
    expect(await child.proc.exited).toBe(0);
    await allGone(state.processes.map((p) => p.pid));
    expect(existsSync(join(dir.path, "state.json"))).toBe(false); // removed with the stack
    expect(await store.list(keys.namespacePrefix(state.namespace))).toEqual([]); // every record withdrawn
  }, 60_000);

  test("up -- CMD runs CMD against the ready stack with its URLs, then stops it and exits with CMD's code", async () => {
    const args = stackArgs(["--no-kv-state-agent"]);
    const script = join(dir.path, "cmd.sh");
    writeFileSync(script, 'curl_ok=$(cat "$KVCR_STATE_FILE" | grep -c frontend_url\\"); echo "F=$KVCR_FRONTEND_URL A=$KVCR_AGENT_URL S=$curl_ok L=${KVCR_LIFELINE:-none}"; exit 7\n');
    const r = await runCli(["up", ...args, "--", "sh", script], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(7);
    expect(r.stdout).toMatch(/^F=http:\/\/127\.0\.0\.1:\d+ A= S=1 L=none$/m);
    expect(r.stderr).toContain("kvcr-mock stack ready"); // the summary leaves stdout to CMD
    expect(r.stderr).toContain("stack stopped");
  }, 60_000);

  test("an agent that never becomes live fails up within --agent-ready-timeout, naming its last probe and output, before any mocker starts", async () => {
    const args = stackArgs(["--agent-ready-timeout", "1.5"]).map((a) => (a.startsWith(FAKE) && a.includes("argv-file") ? `${FAKE} --port {port} --never-ready` : a));
    const r = await runCli(["up", ...args], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/agent did not become ready within 1\.5 s \(waiting for HTTP 200 from http:\/\/127\.0\.0\.1:\d+\/live\); last probe: GET .*\/live: HTTP 503 starting; its last output:\n\s+fake role serving on \d+/);
    expect(r.stderr).not.toContain("mocker-0 |");
  }, 30_000);

  test("SIGINT during start-up abandons it: what started is stopped, exit 0", async () => {
    const args = stackArgs(["--agent-ready-timeout", "60"]).map((a) => (a.startsWith(FAKE) && a.includes("argv-file") ? `${a} --never-ready` : a));
    const child = up(args);
    cleanups.push(async () => void (await child[Symbol.asyncDispose]()));
    await child.readErrLine((l) => l.startsWith("agent    | fake role serving on"), 15_000);
    const agent = JSON.parse(readFileSync(join(dir.path, "agent.json"), "utf8")) as { pid: number };
    child.proc.kill("SIGINT");
    expect(await child.proc.exited).toBe(0);
    expect(child.stderrText()).toContain("SIGINT: start-up abandoned, stack stopped");
    await allGone([agent.pid]);
  }, 30_000);

  test("--restart no: a mocker killed after readiness stops the whole stack, up exiting 1 naming it", async () => {
    const { child, state } = await started(stackArgs(["--no-kv-state-agent", "--restart", "no"]));
    const mocker = state.processes.find((p) => p.name === "mocker-0")!;
    process.kill(mocker.pid, "SIGKILL");
    expect(await child.proc.exited).toBe(1);
    expect(child.stderrText()).toContain(`mocker-0 (pid ${mocker.pid}) was killed by SIGKILL: stopping the stack`);
    await allGone(state.processes.map((p) => p.pid));
  }, 60_000);

  test("up SIGKILLed: every child notices its lifeline is cut and exits (checked by pid)", async () => {
    const { child, state } = await started(stackArgs(["--mocker-processes", "2"]));
    const pids = state.processes.map((p) => p.pid);
    expect(pids.every(pidAlive)).toBe(true);
    process.kill(child.proc.pid, "SIGKILL"); // up alone: its children lead their own process groups
    await child.proc.exited;
    await allGone(pids);
  }, 60_000);

  test("up SIGKILLed: a command that never reads its lifeline (a router) is stopped by the watch up puts in its process group", async () => {
    const args = stackArgs(["--no-kv-state-agent"]);
    const at = args.indexOf("--frontend-cmd");
    args.splice(at, 2, "--frontend-cmd", `${FAKE} --port {port} --workers {workers} --model {model} --ignore-lifeline`);
    const { child, state } = await started(args);
    const frontend = state.processes.find((p) => p.name === "frontend")!;
    expect(pidAlive(frontend.pid)).toBe(true);
    process.kill(child.proc.pid, "SIGKILL");
    await child.proc.exited;
    await allGone(state.processes.map((p) => p.pid));
  }, 60_000);

  test("a child that ignores SIGTERM is SIGKILLed after --grace-period", async () => {
    const args = stackArgs(["--no-kv-state-agent", "--grace-period", "0.5"]).map((a) => (a.includes("--workers {workers}") ? `${a} --ignore-sigterm` : a));
    const { child, state } = await started(args);
    child.proc.kill("SIGTERM");
    expect(await child.proc.exited).toBe(0);
    expect(child.stderrText()).toContain("frontend | fake role: ignoring SIGTERM");
    expect(child.stderrText()).toContain("frontend still running after 0.5 s: SIGKILL");
    await allGone(state.processes.map((p) => p.pid));
  }, 60_000);

  test("--roles mockers waits for the agent's record in discovery, then starts its mockers", async () => {
    const args = stackArgs(["--roles", "mockers", "--cache-slot-base", "16", "--agent-ready-timeout", "20"]);
    const child = up(args);
    cleanups.push(async () => void (await child[Symbol.asyncDispose]()));
    await child.readErrLine((l) => l.includes("waiting for a state agent's record"), 10_000);
    expect(child.stderrText()).not.toContain("mocker-0 |");
    await using store = await openFileDiscoveryStore({ dir: join(dir.path, "discovery") });
    await store.put(keys.agent("dynamo", "agent-1"), { agent_id: "agent-1", http_url: "http://127.0.0.1:1", router_events_endpoint: "tcp://127.0.0.1:2", max_slots: 64 });
    await child.readLine((l) => l.startsWith("kvcr-mock stack ready"), 30_000);
    expect(child.stderrText()).toContain("state agent agent-1 found in discovery");
    expect(readState().processes.map((p) => p.name)).toEqual(["mocker-0"]);
    const intents = await store.list(keys.kindPrefix("dynamo", "intent"));
    expect(intents.map((e) => (e.value as { cache_owner_id: string }).cache_owner_id.slice(-2)).sort()).toEqual(["10", "11"]);
  }, 60_000);

  test("--roles mockers refuses a cache-slot range that overlaps intents already in discovery, naming both owners", async () => {
    const args = stackArgs(["--roles", "mockers", "--cache-slot-base", "4"]);
    await using store = await openFileDiscoveryStore({ dir: join(dir.path, "discovery") });
    await store.put(keys.agent("dynamo", "agent-1"), { agent_id: "agent-1", http_url: "http://127.0.0.1:1", router_events_endpoint: "tcp://127.0.0.1:2", max_slots: 64 });
    const owner = `${"a".repeat(32)}:${"b".repeat(32)}/${"c".repeat(16)}/${"0".repeat(31)}5`;
    const intent = { cache_owner_id: owner, worker_id: "other-host-worker", dp_rank: 0, block_size: 64, ingress_protocol: "vllm_residency_v1", raw_endpoint: "tcp://10.0.0.2:5557", raw_topic: "kvcr-0123456789abcdef", kv_state_endpoint: "dynamo/kv_state_agent/slot", incarnation: 1 };
    await store.put(keys.intent("dynamo", owner, "other-host-worker"), intent);
    const r = await runCli(["up", ...args], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(`CacheOwner ordinals 4–5 of this stack overlap ones already in discovery (namespace dynamo): ordinal 5 is attached by worker other-host-worker rank 0 (pid ${process.pid}) and would be owned by this up's mocker-0. Choose another --cache-slot-base.`);
    expect(r.stderr).not.toContain("mocker-0 |");
  }, 30_000);

  test("--roles mockers without an agent record fails after --agent-ready-timeout, naming the namespace", async () => {
    const r = await runCli(["up", ...stackArgs(["--roles", "mockers", "--agent-ready-timeout", "0.5", "--namespace", "lonely"])], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("no state agent registered in namespace lonely within 0.5 s");
  }, 30_000);
});

describe("kvcr-mock up: two default stacks on one host", () => {
  /** Requests finished by a mocker process, all its workers together (its /metrics). */
  const finished = async (mockerUrl: string) => {
    const text = await (await fetch(`${mockerUrl}/metrics`)).text();
    return [...text.matchAll(/^kvcr_mocker_finished_requests_total(?:\{[^}]*\})? (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };

  test("two ups with default flags, sharing one discovery dir, each see and route to only their own workers", async () => {
    dir = tempDir("kvcr-up-");
    const shared = join(dir.path, "discovery");
    // Defaults but for picked ports, the test's own discovery root (shared by both) and a state file each: no --namespace.
    const launch = async (name: string) => {
      const stateFile = join(dir.path, `${name}.json`);
      const child = up(["--http-port", "0", "--agent-port", "0", "--discovery-dir", shared, "--state-file", stateFile, "--grace-period", "5"]);
      cleanups.push(async () => void (await child[Symbol.asyncDispose]()));
      await child.readLine((l) => l.startsWith("kvcr-mock stack ready"), 30_000);
      const state = JSON.parse(readFileSync(stateFile, "utf8")) as State;
      cleanups.push(async () => {
        for (const p of state.processes) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
      });
      return { child, state, mockers: state.processes.filter((p) => p.name.startsWith("mocker")) };
    };
    const a = await launch("a");
    const b = await launch("b");
    expect(a.state.namespace).not.toBe(b.state.namespace);
    await using store = await openFileDiscoveryStore({ dir: shared });
    for (const [own, other] of [[a, b], [b, a]] as const) {
      const url = own.state.frontend_url;
      const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((m) => m.id)).toEqual(["mock-model"]);
      const health = (await (await fetch(`${url}/health`)).json()) as { instances: number };
      expect(health.instances).toBe(2); // its own two workers, not the other stack's
      // Its workers: the records of its namespace, each served by one of its own mocker processes.
      const ownPorts = new Set(own.mockers.map((m) => new URL(m.url).port));
      const records = (await store.list(keys.kindPrefix(own.state.namespace, "worker"))).map((e) => e.value as { worker_id: string; request_url: string });
      expect(records.map((r) => new URL(r.request_url).port).every((port) => ownPorts.has(port))).toBe(true);
      const ownWorkers = new Set(records.map((r) => r.worker_id));
      expect(ownWorkers.size).toBe(2);
      const before = { own: await finished(own.mockers[0]!.url), other: await finished(other.mockers[0]!.url) };
      const served = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "mock-model", messages: [{ role: "user", content: `request ${i} to ${own.state.namespace}` }], max_tokens: 4 }),
        });
        expect(res.status).toBe(200);
        await res.text();
        served.add(res.headers.get("x-kvcr-worker")!);
      }
      expect([...served].every((w) => ownWorkers.has(w))).toBe(true);
      // Every request was served by this stack's mocker; none reached the other stack's.
      expect(await finished(own.mockers[0]!.url)).toBe(before.own + 6);
      expect(await finished(other.mockers[0]!.url)).toBe(before.other);
    }
    for (const s of [a, b]) s.child.proc.kill("SIGTERM");
    expect(await Promise.all([a.child.proc.exited, b.child.proc.exited])).toEqual([0, 0]);
    expect(existsSync(join(dir.path, "a.json")) || existsSync(join(dir.path, "b.json"))).toBe(false);
  }, 90_000);
});

describe("kvcr-mock up: its state file", () => {
  test("a stale --state-file (its up's pid gone) is overwritten without asking, and removed when the stack stops", async () => {
    const args = stackArgs(["--no-kv-state-agent"]);
    const gone = await goneProcess();
    writeFileSync(join(dir.path, "state.json"), JSON.stringify({ pid: gone.pid, namespace: "old", processes: [] }));
    const { child, state } = await started(args);
    expect(state.pid).toBe(child.proc.pid);
    expect(state.processes.map((p) => p.name)).toEqual(["mocker-0", "frontend"]);
    child.proc.kill("SIGTERM");
    expect(await child.proc.exited).toBe(0);
    expect(existsSync(join(dir.path, "state.json"))).toBe(false);
  }, 60_000);

  test("a stale --state-file is removed even when up fails to start", async () => {
    await using busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") }) as unknown as AsyncDisposable & { port: number };
    const args = stackArgs(["--http-port", String(busy.port)]);
    const gone = await goneProcess();
    writeFileSync(join(dir.path, "state.json"), JSON.stringify({ pid: gone.pid, processes: [] }));
    const r = await runCli(["up", ...args], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(`port ${busy.port} for frontend (--http-port) is already in use`);
    expect(existsSync(join(dir.path, "state.json"))).toBe(false);
  }, 30_000);

  test("a --state-file of a running up is refused before anything starts, and left alone", async () => {
    const args = stackArgs();
    const live = JSON.stringify({ pid: process.pid, processes: [] });
    writeFileSync(join(dir.path, "state.json"), live);
    const r = await runCli(["up", ...args], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(`--state-file ${join(dir.path, "state.json")} belongs to a running up (pid ${process.pid})`);
    expect(r.stderr).not.toContain(" | "); // nothing was started
    expect(readFileSync(join(dir.path, "state.json"), "utf8")).toBe(live);
  }, 30_000);
});

describe("kvcr-mock up refuses to start", () => {
  test("a port in use fails fast, naming the port and the role", async () => {
    await using busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") }) as unknown as AsyncDisposable & { port: number };
    const r = await runCli(["up", ...stackArgs(), "--http-port", String(busy.port)], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(`port ${busy.port} for frontend (--http-port) is already in use on 127.0.0.1`);
    expect(r.stderr).not.toContain(" | "); // nothing was started
  }, 30_000);

  test("a bad stack config file: exit 2, one line per problem", async () => {
    dir = tempDir("kvcr-up-");
    const file = join(dir.path, "stack.yaml");
    writeFileSync(file, "stack:\n  mocker_processes: 0\n  workers: 3\nmockers:\n  block_size: -1\n  http_port: 1\nrouter: {}\n");
    const r = await runCli(["up", "--config", file], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.trim().split("\n").slice(1)).toEqual([
      `  stack.workers (in ${file}): unknown key for the stack section`,
      `  mockers.http_port (in ${file}): unknown key for the mockers section`,
      `  router (in ${file}): unknown section, expected one of stack, agent, mockers, frontend`,
      `  stack.mocker_processes (in ${file}): got 0, expected an integer from 1 to 1024`,
      `  mockers.block_size (in ${file}): got -1, expected an integer from 1 to 65536`,
    ]);
  }, 30_000);
});

describe("kvcr-mock up --restart on-failure (the default)", () => {
  test("a mocker SIGKILLed after readiness is restarted with the same argv: the frontend counts its workers again, requests succeed, the state file shows restarts 1 and the new pid", async () => {
    // The real frontend (it counts workers from discovery), the real mockers, direct mode.
    const args = stackArgs(["--no-kv-state-agent", "--mocker-processes", "2", "--restart-backoff", "0.05", "--log-level", "info"]);
    const at = args.indexOf("--frontend-cmd");
    args.splice(at, 2);
    const { child, state } = await started(args);
    const mocker = state.processes.find((p) => p.name === "mocker-0")!;
    process.kill(mocker.pid, "SIGKILL");
    await waitFor(() => readState().processes.find((p) => p.name === "mocker-0")?.pid !== mocker.pid, { timeoutMs: 30_000, what: "the state file to name mocker-0's new pid" });
    const after = readState().processes.find((p) => p.name === "mocker-0")! as State["processes"][number] & { restarts: number };
    expect(after.restarts).toBe(1);
    expect(pidAlive(after.pid)).toBe(true);
    expect(after.url).toBe(mocker.url);
    expect(readState().processes.filter((p) => p.name !== "mocker-0").map((p) => (p as { restarts?: number }).restarts)).toEqual([0, 0]); // mocker-1, frontend
    expect(child.stderrText()).toMatch(new RegExp(`mocker-0 \\(pid ${mocker.pid}\\) was killed by SIGKILL: restarting it in 0\\.05 s \\(attempt 1 of 5 within 10 min\\)`));
    expect(child.stderrText()).toContain(`mocker-0 restarted (pid ${after.pid}) and ready again`);
    expect(pidAlive(child.proc.pid) && child.proc.exitCode === null).toBe(true); // up kept serving
    await waitFor(async () => ((await (await fetch(`${state.frontend_url}/health`)).json()) as { instances: number }).instances === 4, { timeoutMs: 20_000, what: "the frontend to count all 4 workers again" });
    // Every worker answers again: enough requests that each of the 4 gets some.
    await waitFor(
      async () => {
        for (let i = 0; i < 12; i++) {
          const res = await fetch(`${state.frontend_url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "mock-model", messages: [{ role: "user", content: `after the restart ${i}` }], max_tokens: 4 }),
          });
          if (res.status !== 200) return false;
          await res.text();
        }
        return true;
      },
      { timeoutMs: 20_000, what: "requests through the frontend to succeed again" },
    );
    const res = await fetch(`${after.url}/health`);
    expect(res.status).toBe(200);
    child.proc.kill("SIGINT");
    expect(await child.proc.exited).toBe(0);
    await allGone([...state.processes.map((p) => p.pid), after.pid]);
  }, 90_000);

  test("a router command gets the workers' API URLs up picked; a plain-text /health passes the gate; a restarted mocker serves them on the same ports", async () => {
    const args = stackArgs(["--no-kv-state-agent", "--restart-backoff", "0.05"]);
    const at = args.indexOf("--frontend-cmd");
    args.splice(at, 2, "--frontend-cmd", `${FAKE} --port {port} --model {model} --health-text --argv-file ${join(dir.path, "router.json")} {worker_api_urls:--worker-url}`);
    const { child, state } = await started(args);
    const argv = (JSON.parse(readFileSync(join(dir.path, "router.json"), "utf8")) as { argv: string[] }).argv;
    const urls = argv.flatMap((a, i) => (argv[i - 1] === "--worker-url" ? [a] : []));
    const mocker = state.processes.find((p) => p.name === "mocker-0")! as State["processes"][number] & { worker_api_urls: string[] };
    expect(urls).toHaveLength(2);
    expect(mocker.worker_api_urls).toEqual(urls);
    for (const url of urls) expect((await fetch(`${url}/health`)).status).toBe(200);
    process.kill(mocker.pid, "SIGKILL");
    await waitFor(() => readState().processes.find((p) => p.name === "mocker-0")?.pid !== mocker.pid, { timeoutMs: 30_000, what: "the state file to name mocker-0's new pid" });
    await waitFor(() => child.stderrText().includes("mocker-0 restarted"), { timeoutMs: 30_000, what: "mocker-0 to be ready again" });
    for (const url of urls) expect((await fetch(`${url}/get_load`)).status).toBe(200);
    child.proc.kill("SIGINT");
    expect(await child.proc.exited).toBe(0);
  }, 60_000);

  test("a child that exits at once on every restart stops the stack after --max-restarts, up exiting 1 with its last stderr line", async () => {
    const args = stackArgs(["--no-kv-state-agent", "--max-restarts", "2", "--restart-backoff", "0.05"]);
    // An external mocker: the first run serves (readiness passes); every later one fails at once.
    const script = join(dir.path, "mocker.sh");
    writeFileSync(script, `if [ -e "${join(dir.path, "ran")}" ]; then echo "mocker: cannot start, config broken" >&2; exit 3; fi\ntouch "${join(dir.path, "ran")}"\nexec ${FAKE} --port "$1"\n`);
    const { child, state } = await started([...args, "--mocker-cmd", `/bin/sh ${script} {port}`]);
    const mocker = state.processes.find((p) => p.name === "mocker-0")!;
    process.kill(mocker.pid, "SIGKILL");
    expect(await child.proc.exited).toBe(1);
    const err = child.stderrText();
    expect(err).toContain(`mocker-0 (pid ${mocker.pid}) was killed by SIGKILL: restarting it in 0.05 s (attempt 1 of 2 within 10 min)`);
    expect(err).toMatch(/mocker-0 \(pid \d+\) exited with code 3: restarting it in 0\.1 s \(attempt 2 of 2 within 10 min\)/);
    expect(err).toMatch(/mocker-0 \(pid \d+\) exited with code 3 after 2 restart\(s\) within 10 min \(--max-restarts 2\): stopping the stack; its last stderr lines:\n\s+mocker: cannot start, config broken/);
    await allGone(state.processes.map((p) => p.pid));
    expect(existsSync(join(dir.path, "state.json"))).toBe(false);
  }, 60_000);
});
