// An HTTP/1.x request head (request line and header fields, RFC 9112) decoded once from its bytes
// and checked: what frames the body (Content-Length, chunked), keep-alive, Host and Expect. Pure;
// each fault is an Http1RequestError with the status a server answers and a sentence naming it.

export class Http1RequestError extends Error {
  constructor(
    /** 400, 413, 414, 417, 431, 501 or 505. */
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface RequestHead {
  method: string;
  /** As sent: origin form (`/path?query`), absolute form, or `*`. */
  target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: number;
  /** Every field in order as [name, value, name, value, …]: names lower-cased, values trimmed. */
  headers: string[];
  /** The Host field; undefined when absent or empty (HTTP/1.0 may omit it). */
  host: string | undefined;
  /** Body bytes declared by Content-Length (0 without one or when chunked). */
  contentLength: number;
  chunked: boolean;
  /** The connection may carry another request after this one. */
  keepAlive: boolean;
  /** `Expect: 100-continue`: the client waits for an interim 100 before sending its body. */
  expectContinue: boolean;
}

export interface HeadLimits {
  maxHeaders: number;
  maxBodyBytes: number;
}

const CR = 13;
const TAB = 9;

// Latin-1 keeps every byte as one char (obs-text in values survives; nothing fails to decode).
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(this: Uint8Array, start: number, end: number): string }).latin1Slice;

/** Decodes a head: bytes[from, to), through the empty line that ends it. */
export function decodeRequestHead(bytes: Uint8Array, limits: HeadLimits, from = 0, to = bytes.length): RequestHead {
  const text = latin1Slice.call(bytes, from, to);
  let eol = text.indexOf("\n");
  let lineEnd = eol > 0 && text.charCodeAt(eol - 1) === CR ? eol - 1 : eol;
  const sp1 = text.indexOf(" ");
  const sp2 = sp1 < 0 ? -1 : text.indexOf(" ", sp1 + 1);
  if (sp1 <= 0 || sp2 < 0 || sp2 >= lineEnd || sp2 === sp1 + 1) throw new Http1RequestError(400, `malformed request line: ${quote(text, 0, lineEnd)}`);
  const method = text.slice(0, sp1);
  if (!isToken(method)) throw new Http1RequestError(400, `bad method: ${quote(text, 0, sp1)}`);
  const target = text.slice(sp1 + 1, sp2);
  if (!isVisible(target, 0, target.length)) throw new Http1RequestError(400, `bad request target: ${quote(target, 0, target.length)}`);
  const minor = versionMinor(text, sp2 + 1, lineEnd);
  if (hasControl(text, 0, lineEnd)) throw new Http1RequestError(400, `a control character in the request line: ${quote(text, 0, lineEnd)}`);

  const headers: string[] = [];
  let host: string | undefined;
  let hostSeen = false;
  let contentLength = -1;
  let transferEncoding: string | undefined;
  let close = false;
  let keepAliveAsked = false;
  let expectContinue = false;
  for (let at = eol + 1; at < text.length; at = eol + 1) {
    eol = text.indexOf("\n", at);
    if (eol < 0) eol = text.length;
    lineEnd = eol > at && text.charCodeAt(eol - 1) === CR ? eol - 1 : eol;
    if (lineEnd === at) break; // the empty line that ends the head
    const first = text.charCodeAt(at);
    // Refused, not unfolded: a folded line could hide a field from one parser and not another.
    if (first === 32 || first === TAB) throw new Http1RequestError(400, `obsolete line folding in the request head: ${quote(text, at, lineEnd)}`);
    const colon = text.indexOf(":", at);
    if (colon <= at || colon >= lineEnd) throw new Http1RequestError(400, `malformed header line: ${quote(text, at, lineEnd)}`);
    const name = text.slice(at, colon);
    if (!isToken(name)) throw new Http1RequestError(400, `bad header name (whitespace before the colon, or a character not allowed): ${quote(text, at, colon)}`);
    let from = colon + 1;
    let to = lineEnd;
    while (from < to && isBlank(text.charCodeAt(from))) from++;
    while (to > from && isBlank(text.charCodeAt(to - 1))) to--;
    if (hasControl(text, from, to)) throw new Http1RequestError(400, `a control character in the value of ${name}`);
    if (headers.length >= 2 * limits.maxHeaders) throw new Http1RequestError(431, `more than ${limits.maxHeaders} header fields`);
    const lower = name.toLowerCase();
    const value = text.slice(from, to);
    headers.push(lower, value);
    switch (lower) {
      case "content-length": {
        if (!/^\d{1,15}$/.test(value)) throw new Http1RequestError(400, `bad content-length: ${quote(value, 0, value.length)}`);
        const n = Number(value);
        if (contentLength >= 0 && contentLength !== n) throw new Http1RequestError(400, `two different content-length values (${contentLength} and ${n})`);
        contentLength = n;
        break;
      }
      case "transfer-encoding":
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
        break;
      case "connection":
        for (const token of value.toLowerCase().split(",")) {
          const t = token.trim();
          if (t === "close") close = true;
          else if (t === "keep-alive") keepAliveAsked = true;
        }
        break;
      case "host":
        if (hostSeen) throw new Http1RequestError(400, "more than one Host header");
        hostSeen = true;
        if (!isHost(value)) throw new Http1RequestError(400, `bad Host header: ${quote(value, 0, value.length)}`);
        host = value === "" ? undefined : value;
        break;
      case "expect":
        if (value.toLowerCase() !== "100-continue") throw new Http1RequestError(417, `unsupported expectation: ${quote(value, 0, value.length)} (only 100-continue is)`);
        expectContinue = minor === 1;
        break;
    }
  }

  let chunked = false;
  if (transferEncoding !== undefined) {
    // RFC 9112, section 6.1: faulty framing in HTTP/1.0; with a content-length as well, a smuggling attempt.
    if (minor === 0) throw new Http1RequestError(400, "transfer-encoding in an HTTP/1.0 request");
    if (contentLength >= 0) throw new Http1RequestError(400, "both transfer-encoding and content-length");
    const codings = transferEncoding.toLowerCase().split(",").map((c) => c.trim());
    if (codings.at(-1) !== "chunked") throw new Http1RequestError(400, `transfer-encoding does not end in chunked: ${quote(transferEncoding, 0, transferEncoding.length)}`);
    if (codings.length > 1) throw new Http1RequestError(501, `transfer coding not supported: ${quote(transferEncoding, 0, transferEncoding.length)} (only chunked is)`);
    chunked = true;
  }
  if (contentLength > limits.maxBodyBytes) throw new Http1RequestError(413, `a request body of ${contentLength} bytes exceeds the limit of ${limits.maxBodyBytes} bytes`);
  if (minor === 1 && !hostSeen) throw new Http1RequestError(400, "an HTTP/1.1 request without a Host header");
  return {
    method,
    target,
    minor,
    headers,
    host,
    contentLength: contentLength < 0 ? 0 : contentLength,
    chunked,
    keepAlive: !close && (minor === 1 || keepAliveAsked),
    expectContinue,
  };
}

function versionMinor(text: string, from: number, to: number): number {
  if (to - from === 8 && text.startsWith("HTTP/1.", from)) {
    const minor = text.charCodeAt(from + 7) - 48;
    if (minor === 0 || minor === 1) return minor;
  }
  if (/^HTTP\/\d\.\d$/.test(text.slice(from, to))) throw new Http1RequestError(505, `HTTP version not supported: ${quote(text, from, to)} (HTTP/1.0 and HTTP/1.1 are)`);
  throw new Http1RequestError(400, `malformed request line (no HTTP version at its end): ${quote(text, 0, to)}`);
}

/** RFC 9110 token characters: a method, a field name. */
const TCHAR = (() => {
  const t = new Uint8Array(128);
  for (const c of "!#$%&'*+-.^_`|~") t[c.charCodeAt(0)] = 1;
  for (let c = 48; c <= 57; c++) t[c] = 1;
  for (let c = 65; c <= 90; c++) t[c] = 1;
  for (let c = 97; c <= 122; c++) t[c] = 1;
  return t;
})();

function isToken(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || TCHAR[c] === 0) return false;
  }
  return true;
}

/** Host's characters (RFC 3986: reg-name, IP literal, port); no `/`, `?`, `#`, `@`, `\` or whitespace, which would move the path. */
const HOST_CHAR = (() => {
  const t = new Uint8Array(128);
  for (const c of "-._~!$&'()*+,;=:[]%") t[c.charCodeAt(0)] = 1;
  for (let c = 48; c <= 57; c++) t[c] = 1;
  for (let c = 65; c <= 90; c++) t[c] = 1;
  for (let c = 97; c <= 122; c++) t[c] = 1;
  return t;
})();

function isHost(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || HOST_CHAR[c] === 0) return false;
  }
  return true;
}

const isBlank = (c: number) => c === 32 || c === TAB;

/** Visible characters only (no space, no control): a request target. */
function isVisible(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c <= 32 || c === 127) return false;
  }
  return true;
}

/** A control character other than HTAB (NUL, a bare CR, DEL, …). */
function hasControl(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if ((c < 32 && c !== TAB) || c === 127) return true;
  }
  return false;
}

function quote(s: string, from: number, to: number): string {
  return JSON.stringify(s.slice(from, Math.min(to, from + 80)));
}

