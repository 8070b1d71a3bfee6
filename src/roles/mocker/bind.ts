// Binds a ZMTP socket on host:port for the mocker's event sockets and reports the actual port
// (port 0 = the OS picks); the socket is closed when the bind fails, so nothing leaks.
import type { PortPlan } from "../../transport/port-plan.ts";
import { formatEndpoint, type ZmtpSocket } from "../../transport/zmtp/index.ts";

export interface Bound {
  /** `tcp://host:port` with the actual port. */
  endpoint: string;
  port: number;
}

/**
 * `host` is a hostname, an IPv4 or an IPv6 (bracketed or not). Port 0 with a `plan` binds the
 * plan's next free port instead of asking the kernel (fast with thousands of sockets).
 * Throws KvcrError ZMTP_BIND_FAILED.
 */
export function bindOrClose(socket: ZmtpSocket, host: string, port: number, plan?: PortPlan): Bound {
  try {
    const bare = host.replace(/^\[(.*)\]$/, "$1");
    const bindAt = (p: number) => socket.bind(formatEndpoint(bare, p));
    const endpoint = port === 0 && plan ? plan.bindFree(bindAt) : bindAt(port);
    // bind() returns formatEndpoint(host, actualPort): the port is what follows the last ":"
    // (no second parse per socket; a 4,096-worker mocker binds 8,192 of them).
    return { endpoint, port: Number(endpoint.slice(endpoint.lastIndexOf(":") + 1)) };
  } catch (e) {
    socket.close();
    throw e;
  }
}
