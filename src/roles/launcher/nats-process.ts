// `up --router-replica-sync` without --nats-url: the NATS server the frontends sync over, Debian's
// `nats-server` started as one more supervised child (client port + monitoring port, ready when its
// /healthz answers). Finding the binary is the only I/O here.
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { ProcessSpec } from "./plan.ts";
import { STAGES } from "./plan.ts";

export const NATS_INSTALL_HINT =
  "up --router-replica-sync starts a NATS server, but nats-server is not installed (or not where --nats-server says): install it (Debian/Ubuntu: apt-get install nats-server; elsewhere the nats-server release for your OS, on PATH), give its path with --nats-server, or give --nats-url of a running NATS server";

/** `given` (--nats-server) when it exists; else nats-server on PATH, or where Debian puts it (/usr/sbin, often not on a user's PATH). */
export function findNatsServer(env: Readonly<Record<string, string | undefined>>, exists: (path: string) => boolean = existsSync, given?: string): string | undefined {
  if (given !== undefined) return exists(given) ? given : undefined;
  const dirs = [...(env.PATH ?? "").split(delimiter).filter(Boolean), "/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin"];
  for (const dir of dirs) {
    const path = join(dir, "nats-server");
    if (exists(path)) return path;
  }
  return undefined;
}

export interface NatsPorts {
  client: number;
  monitor: number;
}

/** The nats-server child: bound on the stack's host, monitored over HTTP. */
export function natsProcessSpec(bin: string, bindHost: string, dialHost: string, ports: NatsPorts, readyTimeoutS: number): ProcessSpec {
  const monitor = `http://${dialHost}:${ports.monitor}`;
  return {
    name: "nats",
    role: "nats",
    stage: STAGES.agent,
    argv: [bin, "-a", bindHost, "-p", String(ports.client), "-m", String(ports.monitor)],
    external: true,
    url: natsUrlOf(dialHost, ports),
    ports: { client: ports.client, monitor: ports.monitor },
    readiness: { kind: "ok", url: `${monitor}/healthz` },
    livenessUrl: `${monitor}/healthz`,
    readyTimeoutS,
  };
}

export function natsUrlOf(dialHost: string, ports: NatsPorts): string {
  return `nats://${dialHost}:${ports.client}`;
}
