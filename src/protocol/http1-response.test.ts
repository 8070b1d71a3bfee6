// The HTTP/1.1 response parser: every framing (content-length, chunked with extensions and
// trailers, until close), interim and bodiless statuses, keep-alive rules, the same result however
// the bytes are split, and a clear error for each kind of malformed input (obs-fold and bare CR/LF
// included: they could change the framing).
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Http1ParseError, Http1ResponseParser } from "./http1-response.ts";

interface Parsed {
  status?: number;
  headers?: Record<string, string>;
  body: string;
  ended: boolean;
  keepAlive?: boolean;
}

function parse(chunks: readonly (string | Uint8Array)[], eof = false): Parsed {
  const out: Parsed = { body: "", ended: false };
  const parser = new Http1ResponseParser({
    head: (h) => {
      out.status = h.status;
      out.headers = Object.fromEntries(h.headers);
    },
    body: (c) => (out.body += Buffer.from(c).toString("latin1")),
    end: (keepAlive) => {
      out.ended = true;
      out.keepAlive = keepAlive;
    },
  });
  parser.begin();
  for (const c of chunks) parser.feed(typeof c === "string" ? Buffer.from(c, "latin1") : c);
  if (eof) parser.eof();
  return out;
}

const splitAt = (text: string, cuts: number[]) => {
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const parts: string[] = [];
  let last = 0;
  for (const p of points) {
    parts.push(text.slice(last, p));
    last = p;
  }
  parts.push(text.slice(last));
  return parts;
};

const FIXED = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: 11\r\nX-A: 1\r\nx-a: 2\r\n\r\nhello\nworld";
const CHUNKED = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6;ext=1\r\nhello\n\r\nB\r\n{\"t\":12345}\r\n0\r\nx-trailer: yes\r\n\r\n";

describe("framing", () => {
  test("a content-length response parses to its status, lower-cased joined headers, body and keep-alive", () => {
    expect(parse([FIXED])).toEqual({
      status: 200,
      headers: { "content-type": "application/x-ndjson", "content-length": "11", "x-a": "1, 2" },
      body: "hello\nworld",
      ended: true,
      keepAlive: true,
    });
  });

  test("chunked with a chunk extension and trailers", () => {
    const p = parse([CHUNKED]);
    expect(p.body).toBe('hello\n{"t":12345}');
    expect(p.ended).toBe(true);
    expect(p.keepAlive).toBe(true);
  });

  test("no length and no chunking: the body runs to the connection's end, which is not kept", () => {
    const open = parse(["HTTP/1.1 200 OK\r\n\r\nabc", "def"]);
    expect(open.ended).toBe(false);
    expect(parse(["HTTP/1.1 200 OK\r\n\r\nabc", "def"], true)).toMatchObject({ body: "abcdef", ended: true, keepAlive: false });
  });

  test("an interim 100 Continue is skipped", () => {
    expect(parse(["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"])).toMatchObject({ status: 200, body: "ok", ended: true });
  });

  test("a 204 has no body", () => {
    expect(parse(["HTTP/1.1 204 No Content\r\n\r\n"])).toMatchObject({ status: 204, body: "", ended: true, keepAlive: true });
  });

  test("a 304 has no body, whatever its content-length says", () => {
    expect(parse(["HTTP/1.1 304 Not Modified\r\ncontent-length: 99\r\n\r\n"])).toMatchObject({ status: 304, ended: true });
  });

  test("content-length 0 ends at once", () => {
    expect(parse(["HTTP/1.1 503 Busy\r\ncontent-length: 0\r\n\r\n"])).toMatchObject({ status: 503, body: "", ended: true });
  });

  test("HTTP/1.1 keeps the connection alive unless `connection: close`", () => {
    expect(parse(["HTTP/1.1 200 OK\r\nConnection: Close\r\ncontent-length: 0\r\n\r\n"]).keepAlive).toBe(false);
  });

  test("HTTP/1.0 keeps the connection alive only with `connection: keep-alive`", () => {
    expect(parse(["HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"]).keepAlive).toBe(false);
    expect(parse(["HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n"]).keepAlive).toBe(true);
  });

  test("transfer-encoding with a content-length: framed as chunked, the connection not kept (RFC 9112, section 6.3)", () => {
    const r = parse(["HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"]);
    expect(r).toMatchObject({ status: 200, body: "hi", ended: true, keepAlive: false });
  });

  test("a status line without a reason phrase", () => {
    expect(parse(["HTTP/1.1 200\r\ncontent-length: 1\r\n\r\nx"])).toMatchObject({ status: 200, body: "x" });
  });

  test("the parser is reusable: begin() expects the next response on the same connection", () => {
    const bodies: string[] = [];
    const parser = new Http1ResponseParser({ head: () => {}, body: (c) => bodies.push(Buffer.from(c).toString()), end: () => {} });
    for (const text of [FIXED, CHUNKED, FIXED]) {
      expect(parser.idle).toBe(true);
      parser.begin();
      parser.feed(Buffer.from(text, "latin1"));
    }
    expect(bodies.join("|")).toBe('hello\nworld|hello\n|{"t":12345}|hello\nworld');
  });

  test("body chunks are copies: the fed buffer may be reused by the caller", () => {
    const kept: Uint8Array[] = [];
    const parser = new Http1ResponseParser({ head: () => {}, body: (c) => kept.push(c), end: () => {} });
    parser.begin();
    const buf = Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nabcd");
    parser.feed(buf);
    buf.fill(0);
    expect(Buffer.from(kept[0]!).toString()).toBe("abcd");
  });
});

describe("the same result however the bytes are split", () => {
  for (const [name, text, eof] of [
    ["content-length", FIXED, false],
    ["chunked", CHUNKED, false],
    ["until close", "HTTP/1.1 200 OK\r\nx: y\r\n\r\nsome body\r\n\r\nwith blank lines", true],
    ["interim then chunked", `HTTP/1.1 100 Continue\r\n\r\n${CHUNKED}`, false],
  ] as const) {
    test(name, () => {
      const whole = parse([text], eof);
      fc.assert(
        fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
          expect(parse(splitAt(text, cuts), eof)).toEqual(whole);
        }),
        { numRuns: 300 },
      );
      // And one byte at a time.
      expect(parse([...text], eof)).toEqual(whole);
    });
  }
});

describe("malformed input: a clear error naming the problem", () => {
  const cases: [string, string[], RegExp, boolean?][] = [
    ["not HTTP", ["SSH-2.0-OpenSSH\r\n\r\n"], /not an HTTP\/1\.x status line: "SSH-2\.0-OpenSSH"/],
    ["HTTP/2 preface", ["HTTP/2 200\r\n\r\n"], /not an HTTP\/1\.x status line/],
    ["a 2-digit status", ["HTTP/1.1 20\r\n\r\n"], /not an HTTP\/1\.x status line: "HTTP\/1\.1 20"/],
    ["a 4-digit status", ["HTTP/1.1 2000 OK\r\n\r\n"], /not an HTTP\/1\.x status line/],
    ["HTTP/1.2", ["HTTP/1.2 200 OK\r\n\r\n"], /not an HTTP\/1\.x status line/],
    ["a header without a colon", ["HTTP/1.1 200 OK\r\nbroken header\r\n\r\n"], /malformed header line: "broken header"/],
    ["a bad content-length", ["HTTP/1.1 200 OK\r\ncontent-length: -3\r\n\r\n"], /bad content-length: "-3"/],
    ["a bad chunk size", ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"], /bad chunk size: unexpected "z"/],
    ["an empty chunk size", ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\r\n"], /bad chunk size: an empty chunk-size line/],
    ["a chunk size of 13 hex digits", ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1000000000000\r\n"], /more than 12 hex digits/],
    ["chunk data longer than declared", ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n"], /longer than its declared size/],
    ["a chunk line ending in a bare LF", ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\nab"], /does not end in CRLF/],
    ["an unsupported transfer coding", ["HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n"], /unsupported transfer-encoding: gzip/],
    ["a switch of protocols", ["HTTP/1.1 101 Switching Protocols\r\n\r\n"], /switched protocols/],
    ["bytes after the response", ["HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nxy"], /1 byte\(s\) after the end of the response/],
    ["a head over 64 KiB", [`HTTP/1.1 200 OK\r\nx: ${"a".repeat(70_000)}\r\n\r\n`], /response head exceeds 65536 bytes/],
    ["a cut-off body", ["HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"], /closed in the middle of the response/, true],
    ["nothing before the close", [], /closed before any response/, true],
    ["a status below 100", ["HTTP/1.1 099 Odd\r\n\r\n"], /not an HTTP\/1\.x status line: "HTTP\/1\.1 099 Odd"/],
    ["an obs-fold line (it could carry framing)", ["HTTP/1.1 200 OK\r\nx-a: a\r\n transfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n"], /obsolete line folding in the response head: " transfer-encoding: chunked"/],
    ["a bare LF inside the head", ["HTTP/1.1 200 OK\r\nx-a: 1\ncontent-length: 2\r\n\r\nhi"], /a bare CR or LF in a header line/],
    ["a bare CR inside the head", ["HTTP/1.1 200 OK\r\nx-a: 1\rcontent-length: 2\r\n\r\nhi"], /a bare CR or LF in a header line/],
    // The stray CR restarts the CRLF CRLF match at one byte, so the head still ends where it does.
    ["a bare CR just before the head's end", ["HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx: y\r\r\n\r\nok"], /a bare CR or LF in a header line: "x: y\\r"/],
    ["HTTP/1.0 with transfer-encoding", ["HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"], /transfer-encoding in an HTTP\/1\.0 response/],
  ];
  for (const [name, chunks, message, eof] of cases) {
    test(name, () => {
      let err: unknown;
      try {
        parse(chunks, eof);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(Http1ParseError);
      expect((err as Error).message).toMatch(message);
    });
  }

  test("bytes with no request outstanding", () => {
    const parser = new Http1ResponseParser({ head: () => {}, body: () => {}, end: () => {} });
    expect(() => parser.feed(Buffer.from("HTTP/1.1 200 OK\r\n\r\n"))).toThrow(/arrived with no request outstanding/);
  });
});
