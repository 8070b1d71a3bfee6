// Holds a TCP port open (accepting and closing connections at once) so an advertised placeholder
// endpoint — e.g. a router-hint source control endpoint (SPEC §3) — stays reserved for its owner.
import type { TCPSocketListener } from "bun";
import { bindFailed } from "./bind-error.ts";

export interface HeldPort {
  readonly port: number;
  close(): void;
}

export function holdPort(host: string, port = 0): HeldPort {
  const hostname = host.replace(/^\[|\]$/g, "");
  let listener: TCPSocketListener;
  try {
    listener = Bun.listen({ hostname, port, socket: { open: (s) => void s.end(), data: () => {} } });
  } catch (err) {
    throw bindFailed("BIND_FAILED", "hold a port", hostname, port, err);
  }
  return { port: listener.port, close: () => listener.stop(true) };
}
