// Holds a TCP port open (accepting and closing connections at once) so an advertised placeholder
// endpoint — e.g. a router-hint source control endpoint — stays reserved for its owner.
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
 * `count` distinct free ports on `host`, released before returning, for children that must be told
 * their port up front (a child binding 0 could not be probed). They are picked BELOW the kernel's
 * ephemeral range: every port-0 socket of the stack (the kernel's pick, or a mocker's port plan,
 * which walk that range) would otherwise be free to take one in the moment before its child binds
 * it. Another launcher picking in the same range at the same moment is the remaining (random
 * start, rare) race, which the child then reports as a bind failure naming the port.
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

/**
 * The first of `count` consecutive free ports on `host`, released before returning (for a child
 * told a base port it adds ranks to), below the ephemeral range as pickFreePorts picks; a few
 * random starts are tried.
 */
export function pickFreeRange(host: string, count: number, range: readonly [number, number] = belowEphemeral()): number {
  const [lo, hi] = range;
  for (let attempt = 0; attempt < 32; attempt++) {
    const start = lo + Math.floor(Math.random() * Math.max(1, hi - lo - count + 2));
    const held: HeldPort[] = [];
    try {
      for (let p = start; p < start + count; p++) held.push(holdPort(host, p));
      return start;
    } catch {
      // a port of this run is taken: another start
    } finally {
      for (const h of held) h.close();
    }
  }
  throw new Error(`no ${count} consecutive free ports found on ${host} between ${lo} and ${hi}`);
}

/** Up to 12,000 ports just below the ephemeral range (never under 1024). */
function belowEphemeral(): [number, number] {
  const [lo] = ephemeralRange();
  return lo - 1 >= 2048 ? [Math.max(1024, lo - 12_000), lo - 1] : [1024, 65535];
}
