// A real NATS server for tests: Debian's `nats-server` on free loopback ports (client + monitoring),
// killed on dispose, also when the test failed; kill() and restart() for the fault tests. Without
// it a developer run skips these tests with one line saying how to install it; under CI=true it fails.
import { existsSync } from "node:fs";
import { pickFreePorts } from "../src/transport/port-hold.ts";
import { pipeOutput, spawnChild, waitFor, type SpawnedChild } from "./harness.ts";

/** KVCR_NATS_SERVER_BIN, when set, is the only candidate. */
function findNatsServer(): string | undefined {
  const chosen = process.env.KVCR_NATS_SERVER_BIN;
  if (chosen) return existsSync(chosen) ? chosen : undefined;
  return ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].find((p) => existsSync(p)) ?? Bun.which("nats-server") ?? undefined;
}
export const NATS_SERVER_BIN = findNatsServer();
const INSTALL_HINT = "install it with `apt-get install -y nats-server` (Debian/Ubuntu) or set KVCR_NATS_SERVER_BIN";

let warned = false;
/** True when nats-server can run here; under CI=true a missing one throws (CI cannot pass by skipping). */
export function natsAvailable(): boolean {
  if (NATS_SERVER_BIN) return true;
  if (process.env.CI === "true") throw new Error(`nats-server not found (CI=true requires it): ${INSTALL_HINT}`);
  if (!warned) console.warn(`skipping NATS tests: nats-server not found; ${INSTALL_HINT}`);
  warned = true;
  return false;
}

export interface NatsServer extends AsyncDisposable {
  /** nats://127.0.0.1:PORT */
  readonly url: string;
  /** Kills the server (SIGKILL, as a crash) and waits for it to exit. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and waits until it serves. */
  restart(): Promise<void>;
  /** Clients connected now (the monitoring endpoint's connz). */
  connections(): Promise<number>;
  log(): string;
}

export async function startNatsServer(): Promise<NatsServer> {
  if (!NATS_SERVER_BIN) throw new Error(`nats-server not found: ${INSTALL_HINT}`);
  const bin = NATS_SERVER_BIN;
  const [port, monitor] = pickFreePorts("127.0.0.1", 2);
  const http = `http://127.0.0.1:${monitor}`;
  let output = "";
  let child: SpawnedChild | undefined;
  const spawn = () => {
    child = spawnChild([bin, "-a", "127.0.0.1", "-p", String(port), "-m", String(monitor)]);
    pipeOutput(child, (text) => (output += text));
  };
  const ready = () =>
    waitFor(
      async () => {
        if (child && child.proc.exitCode !== null) throw new Error(`nats-server exited with ${child.proc.exitCode}: ${output.slice(-2000)}`);
        const r = await fetch(`${http}/healthz`, { signal: AbortSignal.timeout(500) });
        return r.ok;
      },
      { timeoutMs: 10_000, what: `nats-server on port ${port} to serve`, intervalMs: 20 },
    );
  const kill = async () => {
    await child?.[Symbol.asyncDispose]();
  };
  spawn();
  try {
    await ready();
  } catch (err) {
    await kill();
    throw err;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    kill,
    async restart() {
      await kill();
      spawn();
      await ready();
    },
    async connections() {
      const r = await fetch(`${http}/connz`, { signal: AbortSignal.timeout(1000) });
      return ((await r.json()) as { num_connections: number }).num_connections;
    },
    log: () => output,
    [Symbol.asyncDispose]: kill,
  };
}
