// The stack suite against both implementations: roles started in this process from the
// launcher's plan, and `kvcr-mock up` (from source) running them as children.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { agentOptions } from "../../src/config/agent.ts";
import { commonOptions } from "../../src/config/common.ts";
import { frontendOptions, type FrontendConfig } from "../../src/config/frontend.ts";
import { loadConfig } from "../../src/config/load.ts";
import { mockerOptions, type MockerConfig } from "../../src/config/mocker.ts";
import type { OptionTable } from "../../src/config/options.ts";
import { upOptions, upProblems, type UpConfig } from "../../src/config/up.ts";
import type { AgentConfig } from "../../src/config/agent.ts";
import type { RoleHandle } from "../../src/lib/role.ts";
import { start as startAgent } from "../../src/roles/agent/start.ts";
import { startFrontend } from "../../src/roles/frontend/start.ts";
import { choosePorts } from "../../src/roles/launcher/start.ts";
import { plan } from "../../src/roles/launcher/plan.ts";
import { probeFor, probeRawSubscribed } from "../../src/roles/launcher/readiness.ts";
import { parseRoles } from "../../src/config/up.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { CLI_ENTRY, spawnProcess, tempDir, waitFor } from "../harness.ts";
import { stackSuite, SUITE_STACK_FLAGS, type RunningStack } from "../stack.suite.ts";
import { logger } from "./mocker-kit.ts";

const SELF = ["/kvcr-mock"];
const configOf = <T extends OptionTable>(table: T, argv: string[]) => loadConfig({ ...table, ...commonOptions }, { argv: argv.slice(SELF.length + 1), env: {} }).config;

/** The launcher's plan, each process started in this process from the argv `up` would give it. */
async function inProcess(): Promise<RunningStack> {
  const dir = tempDir("kvcr-stack-");
  const config = loadConfig({ ...upOptions, ...commonOptions }, { argv: [...SUITE_STACK_FLAGS, "--discovery-dir", join(dir.path, "d")], env: {} }, (c) => upProblems(c as UpConfig)).config as UpConfig;
  const p = plan(config, { self: SELF, ports: choosePorts(config, parseRoles(config.roles).roles), discoveryDir: join(dir.path, "d") });
  const roles: RoleHandle[] = [];
  const close = async () => {
    for (const r of roles.splice(0).reverse()) await r.close();
    dir[Symbol.dispose]();
  };
  try {
    for (const spec of p.processes) {
      const role =
        spec.role === "agent" ? await startAgent(configOf(agentOptions, spec.argv) as AgentConfig, { logger })
        : spec.role === "mocker" ? await startMocker(configOf(mockerOptions, spec.argv) as MockerConfig, { logger, env: {} })
        : await startFrontend(configOf(frontendOptions, spec.argv) as FrontendConfig, { logger });
      roles.push(role);
      const { probe, what } = probeFor(spec.readiness);
      await waitFor(async () => (await probe(), true), { timeoutMs: 20_000, intervalMs: 50, what: `${spec.name}: ${what}` });
    }
    // The gate `up` adds in state-agent mode: the agent follows every raw stream.
    for (const spec of p.processes.filter((s) => s.role === "mocker")) {
      const { probe, what } = probeRawSubscribed(spec.url, config.workersPerProcess * config.dataParallelSize);
      await waitFor(async () => (await probe(), true), { timeoutMs: 20_000, intervalMs: 50, what: `${spec.name}: ${what}` });
    }
    return { frontendUrl: p.frontendUrl!, agentUrl: p.agentUrl!, [Symbol.asyncDispose]: close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** `kvcr-mock up` with the same flags, its roles as child processes. */
async function asChildren(): Promise<RunningStack> {
  const dir = tempDir("kvcr-stack-");
  const state = join(dir.path, "state.json");
  const up = spawnProcess([process.execPath, CLI_ENTRY, "up", ...SUITE_STACK_FLAGS, "--discovery-dir", join(dir.path, "d"), "--state-file", state]);
  const close = async () => {
    up.proc.kill("SIGTERM");
    await up[Symbol.asyncDispose]();
    dir[Symbol.dispose]();
  };
  try {
    await up.readLine((l) => l.startsWith("kvcr-mock stack ready"), 30_000);
    const s = JSON.parse(readFileSync(state, "utf8")) as { frontend_url: string; agent_url: string };
    return { frontendUrl: s.frontend_url, agentUrl: s.agent_url, [Symbol.asyncDispose]: close };
  } catch (err) {
    await close();
    throw err;
  }
}

stackSuite("roles in one process (each role's start(), from the launcher's plan)", inProcess);
stackSuite("kvcr-mock up, roles as child processes", asChildren);
