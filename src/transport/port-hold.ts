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
