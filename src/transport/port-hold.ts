// Holds a TCP port open (accepting and closing connections at once) so an advertised placeholder
// endpoint — e.g. a router-hint source control endpoint (SPEC §3) — stays reserved for its owner.
import type { TCPSocketListener } from "bun";
import { bindFailed } from "./bind-error.ts";
import type { PortPlan } from "./port-plan.ts";

export interface HeldPort {
  readonly port: number;
  close(): void;
}

/** Port 0 with a `plan` holds the plan's next free port instead of asking the kernel. */
export function holdPort(host: string, port = 0, plan?: PortPlan): HeldPort {
  const hostname = host.replace(/^\[|\]$/g, "");
  const listen = (p: number): TCPSocketListener => {
    try {
      return Bun.listen({ hostname, port: p, socket: { open: (s) => void s.end(), data: () => {} } });
    } catch (err) {
      throw bindFailed("BIND_FAILED", "hold a port", hostname, p, err);
    }
  };
  const listener = port === 0 && plan ? plan.bindFree(listen) : listen(port);
  return { port: listener.port, close: () => listener.stop(true) };
}

/** Whether `port` can be bound on `host` right now (tried and released at once). */
export function portFree(host: string, port: number): boolean {
  try {
    holdPort(host, port).close();
    return true;
  } catch {
    return false;
  }
}

/**
 * `count` distinct free ports on `host`, each picked by the OS and released before returning, for
 * children that must be told their port up front (a child binding 0 could not be probed). Ports
 * are held until all are picked, so the list has no duplicates; another process may still take
 * one in the moment before the child binds it, which the child then reports as a bind failure.
 */
export function pickFreePorts(host: string, count: number): number[] {
  const held: HeldPort[] = [];
  try {
    for (let i = 0; i < count; i++) held.push(holdPort(host));
    return held.map((h) => h.port);
  } finally {
    for (const h of held) h.close();
  }
}
