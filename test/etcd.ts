// A real etcd for tests: the Debian `etcd-server` binary started on free loopback ports with a temp
// data dir, stopped (SIGKILL, dir removed) on dispose, also when the test failed. Without etcd a
// developer run skips these tests with one line saying how to install it; under CI=true it fails.
import { afterAll, beforeAll } from "bun:test";
import { existsSync } from "node:fs";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { pickFreePorts } from "../src/transport/port-hold.ts";
import { pipeOutput, spawnChild, testTempRoot, waitFor, type SpawnedChild } from "./harness.ts";

/** KVCR_ETCD_BIN, when set, is the only candidate (so a run can also pretend etcd is missing). */
function findEtcd(): string | undefined {
  const chosen = process.env.KVCR_ETCD_BIN;
  if (chosen) return existsSync(chosen) ? chosen : undefined;
  return ["/usr/bin/etcd", "/usr/local/bin/etcd"].find((p) => existsSync(p)) ?? Bun.which("etcd") ?? undefined;
}
export const ETCD_BIN = findEtcd();
const INSTALL_HINT = "install it with `apt-get install -y etcd-server` (Debian/Ubuntu) or set KVCR_ETCD_BIN";

let warned = false;
/**
 * True when etcd can run here. Prints the skip line once per file; under CI=true a missing etcd
 * throws, so CI cannot pass by skipping.
 */
export function etcdAvailable(): boolean {
  if (ETCD_BIN) return true;
  if (process.env.CI === "true") throw new Error(`etcd not found (CI=true requires it): ${INSTALL_HINT}`);
  if (!warned) console.warn(`skipping etcd tests: etcd not found; ${INSTALL_HINT}`);
  warned = true;
  return false;
}

export interface EtcdServer extends AsyncDisposable {
  /** Client URL, e.g. http://127.0.0.1:41234. */
  readonly endpoint: string;
  readonly dataDir: string;
  /** Kills etcd (SIGKILL, as a crash) and waits for it to exit; the data dir stays. */
  kill(): Promise<void>;
  /** Starts etcd again on the same ports and data dir, and waits until it serves. */
  restart(): Promise<void>;
  /**
   * Kills etcd, deletes its data dir and starts an empty etcd on the same ports (same flags, so
   * the same cluster id): an etcd restored empty, its revisions counting from 1 again.
   */
  wipe(): Promise<void>;
  /** Stops etcd, copies its data dir aside and starts it again (an offline backup). */
  backup(): Promise<void>;
  /** Stops etcd and starts it on the last backup(): its revisions and leases as they were then. */
  restoreBackup(): Promise<void>;
  /** Everything etcd logged (for failure messages). */
  log(): string;
  /** The running etcd's pid (benchmarks read its CPU time). */
  pid(): number | undefined;
}

/**
 * Starts a one-member etcd. `fast` (default) shortens heartbeat and election so leases as short as
 * 1 s work in tests; benchmarks pass false for etcd's stock timings.
 */
export async function startEtcd(opts: { host?: string; fast?: boolean; dataDirBase?: string } = {}): Promise<EtcdServer> {
  if (!ETCD_BIN) throw new Error(`etcd not found: ${INSTALL_HINT}`);
  const bin = ETCD_BIN;
  const host = opts.host ?? "127.0.0.1";
  // tmpfs when there is one: etcd fsyncs every write, which on a shared disk can take seconds.
  const dataDir = await mkdtemp(join(opts.dataDirBase ?? (existsSync("/dev/shm") ? "/dev/shm" : testTempRoot()), "kvcr-etcd-"));
  // etcd must be told its ports up front: two picked below the kernel's ephemeral range, where no
  // port-0 socket of this or another test can take them before etcd binds them.
  const [clientPort, peerPort] = pickFreePorts(host, 2);
  const endpoint = `http://${host}:${clientPort}`;
  const peer = `http://${host}:${peerPort}`;
  let output = "";
  let child: SpawnedChild | undefined;
  const spawn = () => {
    child = spawnChild(
      [bin, "--name", "kvcr-test", "--data-dir", dataDir, "--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", `kvcr-test=${peer}`,
        ...(opts.fast === false ? [] : ["--heartbeat-interval", "10", "--election-timeout", "100"]), "--log-level", "warn"],
    );
    pipeOutput(child, (text) => (output += text));
  };
  const ready = () =>
    waitFor(
      async () => {
        if (child && child.proc.exitCode !== null) throw new Error(`etcd exited with ${child.proc.exitCode}: ${output.slice(-2000)}`);
        const r = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(500) });
        return r.ok && ((await r.json()) as { health?: string }).health === "true";
      },
      { timeoutMs: 15_000, what: `etcd at ${endpoint} to serve`, intervalMs: 25 },
    );
  const kill = async () => {
    await child?.[Symbol.asyncDispose]();
  };
  const backupDir = `${dataDir}-backup`;
  spawn();
  try {
    await ready();
  } catch (err) {
    await kill();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    endpoint,
    dataDir,
    kill,
    async restart() {
      await kill();
      spawn();
      await ready();
    },
    async wipe() {
      await kill();
      await rm(dataDir, { recursive: true, force: true });
      spawn();
      await ready();
    },
    async backup() {
      await kill();
      await rm(backupDir, { recursive: true, force: true });
      await cp(dataDir, backupDir, { recursive: true });
      spawn();
      await ready();
    },
    async restoreBackup() {
      await kill();
      await rm(dataDir, { recursive: true, force: true });
      await cp(backupDir, dataDir, { recursive: true });
      spawn();
      await ready();
    },
    log: () => output,
    pid: () => child?.proc.pid,
    async [Symbol.asyncDispose]() {
      await kill();
      await rm(dataDir, { recursive: true, force: true });
      await rm(backupDir, { recursive: true, force: true });
    },
  };
}

/**
 * One etcd for the enclosing describe: started before its tests, stopped after them (also when
 * they fail); `set` receives it. `let etcd!: EtcdServer; useEtcd((s) => (etcd = s));`
 */
export function useEtcd(set: (server: EtcdServer) => void, opts?: Parameters<typeof startEtcd>[0]): void {
  let server: EtcdServer | undefined;
  beforeAll(async () => {
    server = await startEtcd(opts);
    set(server);
  }, 20_000);
  afterAll(async () => {
    await server?.[Symbol.asyncDispose]();
  });
}

export interface CutableProxy extends Disposable {
  /** http://127.0.0.1:PORT forwarding to the target. */
  readonly endpoint: string;
  /** Drops every open connection and refuses new ones until restore(): the link is down. */
  cut(): void;
  restore(): void;
}

/**
 * A loopback TCP forwarder to `target` (http://host:port) whose link a test can cut and restore,
 * so one client loses etcd while etcd itself (and every other client) carries on.
 */
export function cutableProxy(target: string): CutableProxy {
  const { hostname, port } = new URL(target);
  type Side = { peer?: Bun.Socket<Side>; pending: Uint8Array[] };
  const open = new Set<Bun.Socket<Side>>();
  let down = false;
  const listener = Bun.listen<Side>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        if (down) return void client.end();
        client.data = { pending: [] };
        open.add(client);
        void Bun.connect<Side>({
          hostname,
          port: Number(port),
          socket: {
            open(upstream) {
              upstream.data = { peer: client, pending: [] };
              client.data.peer = upstream;
              open.add(upstream);
              for (const chunk of client.data.pending.splice(0)) upstream.write(chunk);
            },
            data(upstream, chunk) {
              upstream.data.peer?.write(chunk);
            },
            close(upstream) {
              open.delete(upstream);
              upstream.data?.peer?.end();
            },
            error(upstream) {
              upstream.data?.peer?.end();
            },
          },
        }).catch(() => client.end());
      },
      data(client, chunk) {
        if (client.data.peer) client.data.peer.write(chunk);
        else client.data.pending.push(new Uint8Array(chunk));
      },
      close(client) {
        open.delete(client);
        client.data?.peer?.end();
      },
    },
  });
  return {
    endpoint: `http://127.0.0.1:${listener.port}`,
    cut() {
      down = true;
      for (const s of open) s.terminate();
      open.clear();
    },
    restore() {
      down = false;
    },
    [Symbol.dispose]() {
      for (const s of open) s.terminate();
      listener.stop(true);
    },
  };
}
