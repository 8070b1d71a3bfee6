// Free loopback TCP ports for endpoints that must be advertised before anything listens on them
// (e.g. router-hint placeholder endpoints, SPEC §3). Listening sockets take port 0 directly instead.
import { KvcrError } from "./errors.ts";

/**
 * Binds port 0 on `host`, reads the port the OS chose, and releases it. The port is free at that
 * moment only: another process may take it before the caller binds it, so prefer binding port 0
 * wherever the socket itself can be opened right away.
 */
export async function reserveLoopbackPort(host = "127.0.0.1"): Promise<number> {
  const [port] = await reserveLoopbackPorts(1, host);
  return port as number;
}

/** `count` distinct free ports: all are held open together, so the OS cannot hand one out twice. */
export async function reserveLoopbackPorts(count: number, host = "127.0.0.1"): Promise<number[]> {
  if (!Number.isSafeInteger(count) || count < 0) {
    throw new KvcrError("PORT_RESERVE_FAILED", `cannot reserve ${count} ports: count must be a non-negative integer`);
  }
  const listeners: Bun.TCPSocketListener<undefined>[] = [];
  try {
    for (let i = 0; i < count; i++) {
      try {
        listeners.push(Bun.listen({ hostname: host, port: 0, socket: { data() {} } }));
      } catch (err) {
        throw new KvcrError("PORT_RESERVE_FAILED", `cannot bind a free TCP port on ${host}: ${(err as Error).message}`, { cause: err });
      }
    }
    return listeners.map((l) => l.port);
  } finally {
    for (const l of listeners) l.stop(true);
  }
}
