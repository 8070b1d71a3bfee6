// Binds a ZMTP socket on host:port for the mocker's event sockets and reports the actual port
// (port 0 = the OS picks); the socket is closed when the bind fails, so nothing leaks.
import { formatEndpoint, parseEndpoint, type ZmtpSocket } from "../../transport/zmtp/index.ts";

export interface Bound {
  /** `tcp://host:port` with the actual port. */
  endpoint: string;
  port: number;
}

/** `host` is a hostname, an IPv4 or an IPv6 (bracketed or not). Throws KvcrError ZMTP_BIND_FAILED. */
export function bindOrClose(socket: ZmtpSocket, host: string, port: number): Bound {
  try {
    const endpoint = socket.bind(formatEndpoint(host.replace(/^\[(.*)\]$/, "$1"), port));
    return { endpoint, port: parseEndpoint(endpoint, "connect").port };
  } catch (e) {
    socket.close();
    throw e;
  }
}
