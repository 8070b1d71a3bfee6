// Picks ports for "port 0" listeners when a process opens thousands of them. Binding port 0 makes
// the kernel search its ephemeral range for a free port on every call, and with thousands already
// bound that search dominates start-up (8,192 port-0 binds: 3–8 s; sequential ports: 0.25 s). A
// plan walks the same range itself, from a random start so concurrent processes rarely meet,
// binding each next port and stepping over the ones in use; after many collisions in a row it
// leaves the choice to the kernel (port 0) as before.
import { readFileSync } from "node:fs";

export interface PortPlan {
  /**
   * Calls `bind(port)` with planned ports until one binds; returns its result. `bind` throws for
   * a port in use (an error whose `code`, or whose `cause.code`, is EADDRINUSE or EACCES); any
   * other error propagates. After `maxCollisions` in a row, the last try is `bind(0)`.
   */
  bindFree<T>(bind: (port: number) => T): T;
}

export interface PortPlanOptions {
  /** Inclusive range to walk; default the kernel's ephemeral range (ip_local_port_range), else 32768–60999. */
  range?: readonly [number, number];
  /** First port to try; default a random port of the range. */
  start?: number;
  /** Consecutive ports in use before falling back to port 0; default 256. */
  maxCollisions?: number;
}

export function createPortPlan(opts: PortPlanOptions = {}): PortPlan {
  const [lo, hi] = opts.range ?? ephemeralRange();
  const size = hi - lo + 1;
  let next = opts.start ?? lo + Math.floor(Math.random() * size);
  const maxCollisions = Math.min(opts.maxCollisions ?? 256, size);
  return {
    bindFree<T>(bind: (port: number) => T): T {
      for (let tries = 0; tries < maxCollisions; tries++) {
        const port = next;
        next = next >= hi ? lo : next + 1;
        try {
          return bind(port);
        } catch (err) {
          if (!portTaken(err)) throw err;
        }
      }
      return bind(0);
    },
  };
}

/** A port some other socket holds (or one we may not use): try the next. */
function portTaken(err: unknown): boolean {
  const codeOf = (e: unknown) => (e as { code?: unknown } | undefined)?.code;
  const code = codeOf(err) === "EADDRINUSE" || codeOf(err) === "EACCES" ? codeOf(err) : codeOf((err as { cause?: unknown } | undefined)?.cause);
  return code === "EADDRINUSE" || code === "EACCES";
}

/** Linux's ip_local_port_range (the ports port 0 would be given), else the IANA dynamic range's Linux default. */
export function ephemeralRange(read: (path: string) => string = (p) => readFileSync(p, "utf8")): [number, number] {
  try {
    const [lo, hi] = read("/proc/sys/net/ipv4/ip_local_port_range").trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi) && lo! >= 1024 && hi! <= 65535 && lo! <= hi!) return [lo!, hi!];
  } catch {
    // not Linux, or /proc not mounted: the default below
  }
  return [32768, 60999];
}
