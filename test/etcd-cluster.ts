// A real etcd cluster of several members for tests (the Debian `etcd-server` binary, as
// test/etcd.ts): started together on free loopback ports with temp data dirs. A member can be
// paused (SIGSTOP: it keeps its sockets and answers nothing, as a hung process) and resumed;
// dispose resumes every paused member, kills them all and removes their dirs, also on failure.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { pickFreePorts } from "../src/transport/port-hold.ts";
import { ETCD_BIN } from "./etcd.ts";
import { spawnChild, testTempRoot, waitFor, type SpawnedChild } from "./harness.ts";

export interface EtcdMember {
  readonly name: string;
  /** Client URL, e.g. http://127.0.0.1:41234. */
  readonly endpoint: string;
  /** SIGSTOP: the member hangs (connections stay open, nothing is answered). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  readonly paused: boolean;
}

export interface EtcdCluster extends AsyncDisposable {
  readonly members: readonly EtcdMember[];
  readonly endpoints: readonly string[];
  /** Everything the members logged (for failure messages). */
  log(): string;
}

/**
 * Starts `size` members (default 3) and waits until each reports healthy (a leader elected).
 * Heartbeat 50 ms and election 500 ms: quick to notice a paused member, yet steady on a busy machine.
 */
export async function startEtcdCluster(opts: { size?: number } = {}): Promise<EtcdCluster> {
  if (!ETCD_BIN) throw new Error("etcd not found: install it with `apt-get install -y etcd-server` or set KVCR_ETCD_BIN");
  const size = opts.size ?? 3;
  const host = "127.0.0.1";
  const ports = pickFreePorts(host, 2 * size);
  const base = existsSync("/dev/shm") ? "/dev/shm" : testTempRoot();
  const token = `kvcr-test-${process.pid}-${ports[0]}`;
  const specs = Array.from({ length: size }, (_, i) => ({ name: `m${i + 1}`, endpoint: `http://${host}:${ports[2 * i]}`, peer: `http://${host}:${ports[2 * i + 1]}` }));
  const initialCluster = specs.map((s) => `${s.name}=${s.peer}`).join(",");
  let output = "";
  const children: SpawnedChild[] = [];
  const dirs: string[] = [];
  const paused = new Set<number>();
  const pids: number[] = [];

  const stopAll = async () => {
    for (const pid of paused) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // already gone
      }
    }
    paused.clear();
    await Promise.all(children.map((c) => c[Symbol.asyncDispose]()));
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  };

  try {
    for (const s of specs) {
      const dataDir = await mkdtemp(join(base, "kvcr-etcd-"));
      dirs.push(dataDir);
      const child = spawnChild([
        ETCD_BIN, "--name", s.name, "--data-dir", dataDir,
        "--listen-client-urls", s.endpoint, "--advertise-client-urls", s.endpoint,
        "--listen-peer-urls", s.peer, "--initial-advertise-peer-urls", s.peer,
        "--initial-cluster", initialCluster, "--initial-cluster-token", token, "--initial-cluster-state", "new",
        "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "warn",
      ]);
      children.push(child);
      pids.push(child.proc.pid);
      for (const stream of [child.proc.stdout, child.proc.stderr]) {
        void (async () => {
          const d = new TextDecoder();
          for await (const c of stream) output += `[${s.name}] ${d.decode(c, { stream: true })}`;
        })();
      }
    }
    for (const [i, s] of specs.entries()) {
      await waitFor(
        async () => {
          const exit = children[i]!.proc.exitCode;
          if (exit !== null) throw new Error(`etcd ${s.name} exited with ${exit}: ${output.slice(-2000)}`);
          const r = await fetch(`${s.endpoint}/health`, { signal: AbortSignal.timeout(1000) });
          return r.ok && ((await r.json()) as { health?: string }).health === "true";
        },
        { timeoutMs: 20_000, what: `etcd member ${s.name} at ${s.endpoint} to serve`, intervalMs: 50 },
      );
    }
  } catch (err) {
    await stopAll();
    throw err;
  }

  const members: EtcdMember[] = specs.map((s, i) => ({
    name: s.name,
    endpoint: s.endpoint,
    pause() {
      process.kill(pids[i]!, "SIGSTOP");
      paused.add(pids[i]!);
    },
    resume() {
      process.kill(pids[i]!, "SIGCONT");
      paused.delete(pids[i]!);
    },
    get paused() {
      return paused.has(pids[i]!);
    },
  }));
  return {
    members,
    endpoints: specs.map((s) => s.endpoint),
    log: () => output,
    [Symbol.asyncDispose]: stopAll,
  };
}
