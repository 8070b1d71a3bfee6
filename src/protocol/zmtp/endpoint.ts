// Parses ZeroMQ TCP endpoints ("tcp://HOST:PORT") as libzmq spells them: `*` for any address on
// bind, `*` or 0 for an ephemeral port on bind, IPv6 in brackets. Pure, so config can use it.
import { KvcrError } from "../../lib/errors.ts";

export interface TcpEndpoint {
  /** Address for Bun.listen / Bun.connect ("0.0.0.0" for `*`). */
  host: string;
  /** 0 = ephemeral (bind only). */
  port: number;
}

export function parseEndpoint(endpoint: string, use: "bind" | "connect"): TcpEndpoint {
  const bad = (why: string) =>
    new KvcrError("ENDPOINT_INVALID", `invalid ZeroMQ endpoint "${endpoint}": ${why}; expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:5557`);
  if (!endpoint.startsWith("tcp://")) throw bad("only the tcp:// transport is supported");
  const rest = endpoint.slice("tcp://".length);
  const colon = rest.lastIndexOf(":");
  if (colon < 0) throw bad("missing :PORT");
  let host = rest.slice(0, colon);
  const portText = rest.slice(colon + 1);
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (host === "") throw bad("missing HOST");
  if (host === "*") {
    if (use === "connect") throw bad("HOST `*` is only valid for bind");
    host = "0.0.0.0";
  }
  let port: number;
  if (portText === "*") port = 0;
  else if (/^\d{1,5}$/.test(portText)) port = Number(portText);
  else throw bad(`PORT "${portText}" is not a number`);
  if (port > 65535) throw bad(`PORT ${port} is above 65535`);
  if (port === 0 && use === "connect") throw bad("cannot connect to port 0");
  return { host, port };
}

export function formatEndpoint(host: string, port: number): string {
  return host.includes(":") ? `tcp://[${host}]:${port}` : `tcp://${host}:${port}`;
}
