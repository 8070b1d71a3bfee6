// Parses ZeroMQ TCP endpoints ("tcp://HOST:PORT") as libzmq spells them: `*` for any address on
// bind, `*` or 0 for an ephemeral port on bind, IPv6 in brackets (or bare: the port follows the
// last colon, as in libzmq). HOST is checked here, so a typo fails at once instead of a dialer
// retrying a name that can never resolve. Pure, so config can use it.
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
  const hostText = rest.slice(0, colon);
  const portText = rest.slice(colon + 1);
  let host = hostText;
  if (host === "*") {
    if (use === "connect") throw bad("HOST `*` is only valid for bind");
    host = "0.0.0.0";
  } else {
    const bracketed = host.startsWith("[") && host.endsWith("]");
    if (bracketed) host = host.slice(1, -1);
    if (host === "") throw bad("missing HOST");
    const why = bracketed || host.includes(":") ? ipv6Problem(host) : hostProblem(host);
    if (why) throw bad(`HOST "${hostText}" ${why}`);
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

/** A hostname (RFC 1123 labels; `_` allowed, as container service names use it) or an IPv4. */
function hostProblem(host: string): string | undefined {
  if (host.includes("[") || host.includes("]")) return "has an unbalanced bracket; IPv6 goes in brackets: tcp://[::1]:5557";
  const badChar = /[^A-Za-z0-9._-]/.exec(host);
  if (badChar) return `is not a hostname, IPv4 or IPv6 address (bad character ${JSON.stringify(badChar[0])})`;
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  const labels = name.split(".");
  if (labels.every((l) => /^\d+$/.test(l))) {
    return labels.length === 4 && labels.every((l) => l.length <= 3 && Number(l) <= 255) ? undefined : "is not a valid IPv4 address (four numbers 0-255)";
  }
  if (name.length > 253) return `is not a hostname: ${name.length} characters (at most 253)`;
  for (const label of labels) {
    if (label === "") return "is not a hostname: empty label";
    if (label.length > 63) return `is not a hostname: label of ${label.length} characters (at most 63)`;
    if (label.startsWith("-") || label.endsWith("-")) return `is not a hostname: label "${label}" starts or ends with "-"`;
  }
  return undefined;
}

/** An IPv6 literal (RFC 4291 text forms, optional trailing IPv4 and %zone). */
function ipv6Problem(host: string): string | undefined {
  const why = "is not a valid IPv6 address";
  if (host.includes("[") || host.includes("]")) return "has an unbalanced bracket; IPv6 goes in brackets: tcp://[::1]:5557";
  const zoneAt = host.indexOf("%");
  const addr = zoneAt < 0 ? host : host.slice(0, zoneAt);
  if (zoneAt >= 0 && !/^[A-Za-z0-9_.-]+$/.test(host.slice(zoneAt + 1))) return why;
  const halves = addr.split("::");
  if (halves.length > 2) return why;
  const groupsOf = (part: string) => (part === "" ? [] : part.split(":"));
  const groups = halves.flatMap(groupsOf);
  let count = groups.length;
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    if (i === groups.length - 1 && g.includes(".")) {
      if (hostProblem(g) !== undefined || !/^[\d.]+$/.test(g)) return why;
      count++; // an embedded IPv4 fills two groups
    } else if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return why;
  }
  return halves.length === 2 ? (count <= 7 ? undefined : why) : count === 8 ? undefined : why;
}
