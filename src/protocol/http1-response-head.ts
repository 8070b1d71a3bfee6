// An HTTP/1.1 response head as the server writes it: status line, the app's fields (framing and
// connection fields are the server's to set, so the app's are left out), Date, then the body's
// framing and the connection's fate. Pure: the caller passes the date and writes the string.

/** An answer's header fields: [name, value] pairs (a Headers), or a record of lower-case names. */
export type HeadFields = Iterable<[string, string]> | Readonly<Record<string, string>>;

const isIterable = (f: HeadFields): f is Iterable<[string, string]> => typeof (f as Partial<Iterable<unknown>>)[Symbol.iterator] === "function";

/** How the body is delimited on the wire. */
export type BodyFraming = { kind: "length"; length: number } | { kind: "chunked" } | { kind: "none" } | { kind: "until-close" };

/** Fields the server sets itself: an app's own would contradict the framing it writes. */
const SERVER_OWNED = new Set(["content-length", "transfer-encoding", "connection", "keep-alive"]);

const REASONS: Record<number, string> = {
  100: "Continue", 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 206: "Partial Content",
  301: "Moved Permanently", 302: "Found", 304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect",
  400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
  409: "Conflict", 410: "Gone", 411: "Length Required", 413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type",
  417: "Expectation Failed", 422: "Unprocessable Content", 429: "Too Many Requests", 431: "Request Header Fields Too Large", 499: "Client Closed Request",
  500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
};

/** The status line for `status` (an unknown code gets an empty reason phrase, which RFC 9112 allows). */
export function statusLine(status: number): string {
  return `HTTP/1.1 ${status} ${REASONS[status] ?? ""}\r\n`;
}

/** A status with no body whatever the app returned (RFC 9110, sections 15.2, 15.3.5, 15.4.5). */
export function isBodilessStatus(status: number): boolean {
  return status < 200 || status === 204 || status === 304;
}

/**
 * The head, through its empty line. `connection` adds `Connection: close` or, for an HTTP/1.0
 * client kept alive, `Connection: keep-alive`; undefined writes neither (HTTP/1.1's default).
 */
export function responseHead(status: number, fields: HeadFields, date: string, framing: BodyFraming, connection: "close" | "keep-alive" | undefined): string {
  let head = statusLine(status);
  let hasDate = false;
  const field = (name: string, value: string) => {
    if (SERVER_OWNED.has(name)) return;
    if (name === "date") hasDate = true;
    head += `${name}: ${value}\r\n`;
  };
  if (isIterable(fields)) for (const [name, value] of fields) field(name, value);
  else for (const name in fields) field(name, fields[name]!);
  if (!hasDate) head += `date: ${date}\r\n`;
  if (framing.kind === "length") head += `content-length: ${framing.length}\r\n`;
  else if (framing.kind === "chunked") head += "transfer-encoding: chunked\r\n";
  if (connection !== undefined) head += `connection: ${connection}\r\n`;
  return `${head}\r\n`;
}

/** True when the app's fields ask for the connection to close after this response. */
export function asksToClose(fields: { get(name: string): string | null } | Readonly<Record<string, string>>): boolean {
  const value = typeof fields.get === "function" ? (fields as { get(name: string): string | null }).get("connection") : ((fields as Readonly<Record<string, string>>).connection ?? null);
  return value !== null && /(?:^|,)\s*close\s*(?:,|$)/i.test(value);
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/** IMF-fixdate (RFC 9110, section 5.6.7), e.g. `Thu, 03 Dec 2026 18:40:44 GMT`. */
export function httpDate(epochMs: number): string {
  const d = new Date(epochMs);
  return `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} GMT`;
}
