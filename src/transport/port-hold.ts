// Holds a TCP port open (accepting and closing connections at once) so an advertised placeholder
// endpoint — e.g. a router-hint source control endpoint (SPEC §3) — stays reserved for its owner.
export interface HeldPort {
  readonly port: number;
  close(): void;
}

export function holdPort(host: string, port = 0): HeldPort {
  const listener = Bun.listen({
    hostname: host.replace(/^\[|\]$/g, ""),
    port,
    socket: { open: (s) => void s.end(), data: () => {} },
  });
  return { port: listener.port, close: () => listener.stop(true) };
}
