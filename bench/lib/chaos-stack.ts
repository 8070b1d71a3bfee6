// A whole `kvcr-mock up` stack as a child for the chaos bench: started with a state file, read back
// (every process, its URL and raw ports, the agent's router-event endpoint from discovery), stopped.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { LineQueue } from "../../test/lines.ts";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";

const CLI = process.env.BENCH_BIN ? [process.env.BENCH_BIN] : [process.execPath, resolve(import.meta.dir, "../../src/cli.ts")];

export interface StackProcessInfo {
  name: string;
  role: string;
  pid: number;
  url: string;
  raw_endpoints?: string[][];
}

export interface ChaosStack {
  upPid: number;
  dir: string;
  frontendUrl: string;
  agentUrl: string | undefined;
  namespace: string;
  processes(): StackProcessInfo[];
  /** The agent's router-event PUB (tcp://host:port), from its discovery record. */
  agentEventsEndpoint(): Promise<string | undefined>;
  /** up's stderr lines so far. */
  log: string[];
  stop(): Promise<void>;
}

export async function startStack(args: readonly string[]): Promise<ChaosStack> {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-chaos-"));
  const stateFile = join(dir, "state.json");
  const discoveryDir = join(dir, "discovery");
  const up = Bun.spawn([...CLI, "up", "--http-port", "0", "--agent-port", "0", "--discovery-dir", discoveryDir, "--state-file", stateFile, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  });
  const err = new LineQueue(up.stderr);
  const stop = async () => {
    up.kill("SIGTERM");
    await up.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await new LineQueue(up.stdout).next((l) => l.startsWith("kvcr-mock stack ready"), 120_000, () => `stack ready; up said:\n${err.lines.slice(-8).join("\n")}`);
  } catch (e) {
    await stop();
    throw e;
  }
  const read = () => JSON.parse(readFileSync(stateFile, "utf8")) as { namespace: string; frontend_url: string; agent_url: string | null; processes: StackProcessInfo[] };
  const first = read();
  return {
    upPid: up.pid,
    dir,
    frontendUrl: first.frontend_url,
    agentUrl: first.agent_url ?? undefined,
    namespace: first.namespace,
    processes: () => read().processes,
    agentEventsEndpoint: async () => {
      const store = await openFileDiscoveryStore({ dir: discoveryDir });
      try {
        const [agent] = await store.list(keys.kindPrefix(first.namespace, "agent"));
        return (agent?.value as { router_events_endpoint?: string } | undefined)?.router_events_endpoint;
      } finally {
        await store.close();
      }
    },
    log: err.lines,
    stop,
  };
}

/** Resident set of a process in MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}
