// Holds a TCP port open (accepting and closing connections at once) so an advertised placeholder
// endpoint — e.g. a router-hint source control endpoint (SPEC §3) — stays reserved for its owner.
import type { TCPSocketListener } from "bun";
import { bindFailed } from "./bind-error.ts";
import { createPortPlan, ephemeralRange, type PortPlan } from "./port-plan.ts";

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
 * `count` distinct free ports on `host`, released before returning, for children that must be
 * told their port up front (a child binding 0 could not be probed). They come from just below the
 * kernel's ephemeral range (by default the 10,000 ports under it), where no port-0 bind and no
 * outgoing connection lands: a child that binds thousands of port-0 sockets (a mocker's event
 * ports) cannot take the port another child was promised. Ports are held until all are picked, so
 * the list has no duplicates; another process that binds fixed ports may still take one before the
 * child binds it, which the child then reports as a bind failure.
 */
export function pickFreePorts(host: string, count: number, range: readonly [number, number] = belowEphemeral()): number[] {
  const plan = createPortPlan({ range });
  const held: HeldPort[] = [];
  try {
    for (let i = 0; i < count; i++) held.push(holdPort(host, 0, plan));
    return held.map((h) => h.port);
  } finally {
    for (const h of held) h.close();
  }
}

/** The ports under the ephemeral range (or the range itself when there is no room below it). */
export function belowEphemeral(span = 10_000): [number, number] {
  const [lo, hi] = ephemeralRange();
  return lo - 1 >= 1024 + 1000 ? [Math.max(1024, lo - span), lo - 1] : [lo, hi];
}
