// The stack examples a user copies (examples/*.sh, examples/stack-*.yaml) start a stack that
// reaches readiness and run a command against it. Until agent and frontend run inside `up` by
// default here, fake stand-ins take their place through --agent-cmd / --frontend-cmd; the real
// mockers run with the example's exact engine settings.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR, REPO_ROOT, runCli, tempDir } from "../harness.ts";

const FAKE = `${process.execPath} ${join(FIXTURES_DIR, "fake-role.ts")}`;

function overrides(dir: string): string[] {
  return [
    "--discovery-dir", join(dir, "discovery"),
    "--http-port", "0",
    "--agent-port", "0",
    "--agent-cmd", `${FAKE} --port {port}`,
    "--frontend-cmd", `${FAKE} --port {port} --workers {workers} --model {model}`,
    "--state-file", join(dir, "state.json"),
    "--", "sh", "-c", 'cp "$KVCR_STATE_FILE" "$0.copy"; curl -sf "$KVCR_FRONTEND_URL/v1/models" >/dev/null 2>&1 || true', join(dir, "state.json"),
  ];
}

/** Runs `script` (an example), or `kvcr-mock …` when script is undefined, with the overrides. */
async function runExample(script: string | undefined, args: string[], env: Record<string, string> = {}) {
  using dir = tempDir("kvcr-example-");
  const r = await runCli(args.concat(overrides(dir.path)), { bin: script, cwd: REPO_ROOT, env, timeoutMs: 60_000 });
  const state = r.exitCode === 0 ? (JSON.parse(readFileSync(join(dir.path, "state.json.copy"), "utf8")) as { mode: string; processes: { name: string; argv?: string[] }[] }) : undefined;
  return { ...r, state };
}

test("examples/agg_kvcr_state_agent.sh: agent, one mocker × 2 workers (RAW_HOST and CACHE_SLOT overridable), frontend", async () => {
  const r = await runExample(join(REPO_ROOT, "examples/agg_kvcr_state_agent.sh"), [], { KVCR_MOCK: `${process.execPath} ${join(REPO_ROOT, "src/cli.ts")}`, CACHE_SLOT: "40", RAW_HOST: "127.0.0.1" });
  expect(r.stderr).toContain("kvcr-mock stack ready");
  expect(r.exitCode).toBe(0);
  expect(r.state!.mode).toBe("state_agent");
  expect(r.state!.processes.map((p) => p.name)).toEqual(["agent", "mocker-0", "frontend"]);
  // CACHE_SLOT reached the mocker as its first CacheOwner slot.
  expect(r.stderr).toContain("state-agent mode: 2 cache owner(s) from slot 40");
}, 60_000);

test("examples/agg_direct.sh: direct mode, no agent", async () => {
  const r = await runExample(join(REPO_ROOT, "examples/agg_direct.sh"), [], { KVCR_MOCK: `${process.execPath} ${join(REPO_ROOT, "src/cli.ts")}` });
  expect(r.exitCode).toBe(0);
  expect(r.state!.mode).toBe("direct");
  expect(r.state!.processes.map((p) => p.name)).toEqual(["mocker-0", "frontend"]);
}, 60_000);

test("examples/stack-multi-process.yaml: four mocker processes from one stack file", async () => {
  // The example's fixed ports are kept out of the way of parallel tests: picked ones instead.
  const r = await runExample(undefined, ["up", "--config", "examples/stack-multi-process.yaml", "--zmq-kv-events-ports", "0", "--zmq-replay-ports", "0", "--workers-per-process", "2"]);
  expect(r.stderr).toContain("kvcr-mock stack ready");
  expect(r.exitCode).toBe(0);
  expect(r.state!.processes.map((p) => p.name)).toEqual(["agent", "mocker-0", "mocker-1", "mocker-2", "mocker-3", "frontend"]);
  expect(r.stderr).toContain("mocker-3 | [info] [mocker] state-agent mode: 4 cache owner(s) from slot 12"); // 3 × 2 workers × 2 ranks
}, 60_000);
