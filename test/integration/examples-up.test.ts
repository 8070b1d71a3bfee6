// The stack examples a user copies (examples/*.sh, examples/stack-*.yaml) start the real stack
// (agent, mockers, frontend from source), reach readiness and answer a chat request made by a
// command run against it (`-- CMD`). Ports are picked and discovery is private to each test.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, runCli, tempDir } from "../harness.ts";

/** The command run against the ready stack: keeps a copy of the state file, prints one chat reply's usage. */
const CHAT = `
  const fs = require("node:fs");
  fs.copyFileSync(process.env.KVCR_STATE_FILE, process.argv[1] + ".copy");
  const res = await fetch(process.env.KVCR_FRONTEND_URL + "/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "mock-model", messages: [{ role: "user", content: "hello from the example test" }], max_tokens: 4 }) });
  console.log("chat", res.status, JSON.stringify((await res.json()).usage));
  if (process.env.KVCR_AGENT_URL) {
    const slots = await (await fetch(process.env.KVCR_AGENT_URL + "/v1/slots")).json();
    console.log("slots", slots.map((s) => parseInt(s.cache_owner_id.slice(-32), 16) + ":" + s.state).join(" "));
  }
  process.exit(res.status === 200 ? 0 : 1);
`;

function overrides(dir: string): string[] {
  return [
    "--discovery-dir", join(dir, "discovery"),
    "--http-port", "0",
    "--agent-port", "0",
    "--state-file", join(dir, "state.json"),
    "--log-level", "warn",
    "--", process.execPath, "-e", CHAT, join(dir, "state.json"),
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
  expect(r.stdout).toMatch(/^chat 200 \{"prompt_tokens":\d+,"completion_tokens":4,/m);
  expect(r.state!.mode).toBe("state_agent");
  expect(r.state!.processes.map((p) => p.name)).toEqual(["agent", "mocker-0", "frontend"]);
  // CACHE_SLOT reached the mockers: the agent serves slots 40 and 41.
  expect(r.stdout).toMatch(/^slots 40:active 41:active$/m);
}, 60_000);

test("examples/agg_direct.sh: direct mode, no agent", async () => {
  const r = await runExample(join(REPO_ROOT, "examples/agg_direct.sh"), [], { KVCR_MOCK: `${process.execPath} ${join(REPO_ROOT, "src/cli.ts")}` });
  expect(r.exitCode).toBe(0);
  expect(r.stdout).toMatch(/^chat 200 /m);
  expect(r.state!.mode).toBe("direct");
  expect(r.state!.processes.map((p) => p.name)).toEqual(["mocker-0", "frontend"]);
}, 60_000);

test("examples/stack-multi-process.yaml: four mocker processes from one stack file", async () => {
  // The example's fixed ports are kept out of the way of parallel tests: picked ones instead.
  const r = await runExample(undefined, ["up", "--config", "examples/stack-multi-process.yaml", "--zmq-kv-events-ports", "0", "--zmq-replay-ports", "0", "--workers-per-process", "2"]);
  expect(r.stderr).toContain("kvcr-mock stack ready");
  expect(r.exitCode).toBe(0);
  expect(r.state!.processes.map((p) => p.name)).toEqual(["agent", "mocker-0", "mocker-1", "mocker-2", "mocker-3", "frontend"]);
  expect(r.stdout).toMatch(/^chat 200 /m);
  expect(r.stdout).toContain(`slots ${Array.from({ length: 16 }, (_, k) => `${k}:active`).join(" ")}`); // 4 processes × 2 workers × 2 ranks
}, 60_000);
