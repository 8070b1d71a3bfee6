// The HTTP/1.x request parser: every framing (none, content-length, chunked), pipelined requests
// stopping at each end, HTTP/1.0 without Host, keep-alive rules, the same result however the bytes
// are split, and a clear error with its status for each kind of malformed input.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { DEFAULT_REQUEST_LIMITS, Http1RequestError, Http1RequestParser, type RequestHead, type RequestLimits } from "./http1-request.ts";

interface Parsed {
  head: RequestHead;
  body: string;
  ended: boolean;
}

/** Feeds every chunk whole (stopping at each request's end and going on), as a server does. */
function parse(chunks: readonly (string | Uint8Array)[], limits?: RequestLimits): Parsed[] {
  const out: Parsed[] = [];
  const parser = new Http1RequestParser(
    {
      head: (head) => out.push({ head, body: "", ended: false }),
      body: (c) => (out.at(-1)!.body += Buffer.from(c).toString("latin1")),
      end: () => (out.at(-1)!.ended = true),
    },
    limits,
  );
  for (const c of chunks) {
    const bytes = typeof c === "string" ? Buffer.from(c, "latin1") : c;
    let pos = 0;
    let stops = 0;
    while (pos < bytes.length) {
      const before = out.filter((p) => p.ended).length;
      pos = parser.feed(bytes, pos);
      if (pos < bytes.length) {
        // It stopped early only at a request's end.
        expect(out.filter((p) => p.ended).length).toBe(before + 1);
        stops++;
      }
    }
    expect(stops).toBeLessThanOrEqual(out.length);
  }
  return out;
}

function errorOf(chunks: readonly string[], limits?: RequestLimits): Http1RequestError {
  try {
    parse(chunks, limits);
  } catch (err) {
    if (err instanceof Http1RequestError) return err;
    throw err;
  }
  throw new Error(`no error for ${JSON.stringify(chunks)}`);
}

describe("framing", () => {
  test("a GET with no body ends with its head; names are lower-cased, values trimmed, repeats kept in order", () => {
    const [p] = parse(["GET /health?x=1 HTTP/1.1\r\nHost: a:80\r\nX-A:  1 \r\nx-a: 2\r\n\r\n"]);
    expect(p).toEqual({
      head: { method: "GET", target: "/health?x=1", minor: 1, headers: ["host", "a:80", "x-a", "1", "x-a", "2"], host: "a:80", contentLength: 0, chunked: false, keepAlive: true, expectContinue: false },
      body: "",
      ended: true,
    });
  });

  test("HTTP/1.0 without Host: no host, not kept alive unless it asks", () => {
    expect(parse(["GET /health HTTP/1.0\r\n\r\n"])[0]!.head).toMatchObject({ minor: 0, host: undefined, keepAlive: false, headers: [] });
    expect(parse(["GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"])[0]!.head.keepAlive).toBe(true);
    expect(parse(["GET / HTTP/1.1\r\nhost: a\r\nconnection: keep-alive, close\r\n\r\n"])[0]!.head.keepAlive).toBe(false);
  });

  test("a content-length body", () => {
    const [p] = parse(["POST /v1/generate HTTP/1.1\r\nhost: a\r\ncontent-length: 11\r\n\r\nhello world"]);
    expect(p).toMatchObject({ body: "hello world", ended: true, head: { contentLength: 11, chunked: false } });
  });

  test("chunked with an extension and trailers", () => {
    const [p] = parse(["POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n {\"t\":123}\r\n0\r\nx-trailer: yes\r\n\r\n"]);
    expect(p).toMatchObject({ body: 'hello {"t":123}', ended: true, head: { chunked: true, contentLength: 0 } });
  });

  test("pipelined requests: the parser stops after each, and the next parses from there", () => {
    const bytes = Buffer.from("POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhiGET /b HTTP/1.1\r\nhost: x\r\n\r\nPOST /c HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n1\r\n!\r\n0\r\n\r\n");
    const seen: string[] = [];
    const parser = new Http1RequestParser({ head: (h) => seen.push(h.target), body: (c) => seen.push(Buffer.from(c).toString()), end: () => seen.push("end") });
    const stops: number[] = [];
    for (let pos = 0; pos < bytes.length; ) stops.push((pos = parser.feed(bytes, pos)));
    expect(seen).toEqual(["/a", "hi", "end", "/b", "end", "/c", "!", "end"]);
    expect(stops).toHaveLength(3);
    expect(stops.at(-1)).toBe(bytes.length);
    expect(parser.inMessage).toBe(false);
  });

  test("empty lines before a request line are skipped; LF alone ends head lines", () => {
    const ps = parse(["\r\n\r\nGET / HTTP/1.0\n\n", "\nGET /b HTTP/1.1\nhost: a\ncontent-length: 1\n\nz"]);
    expect(ps.map((p) => [p.head.target, p.body])).toEqual([["/", ""], ["/b", "z"]]);
  });

  test("bytes 0x80–0xFF in a value survive as Latin-1; Expect: 100-continue is seen", () => {
    const head = Buffer.concat([Buffer.from("GET / HTTP/1.1\r\nhost: a\r\nexpect: 100-Continue\r\nx-name: caf"), Buffer.from([0xe9]), Buffer.from("\r\n\r\n")]);
    const [p] = parse([head]);
    expect(p!.head.headers).toContain("caf\u00e9");
    expect(p!.head.expectContinue).toBe(true);
  });

  test("where a request stands: in its head, in its body, between requests", () => {
    const parser = new Http1RequestParser({ head: () => {}, body: () => {}, end: () => {} });
    expect([parser.inMessage, parser.inBody]).toEqual([false, false]);
    parser.feed(Buffer.from("POST / HTTP/1.1\r\nhost: a\r\n"));
    expect([parser.inMessage, parser.inBody]).toEqual([true, false]);
    parser.feed(Buffer.from("content-length: 3\r\n\r\nab"));
    expect([parser.inMessage, parser.inBody]).toEqual([true, true]);
    parser.feed(Buffer.from("c"));
    expect([parser.inMessage, parser.inBody]).toEqual([false, false]);
  });
});

describe("split anywhere", () => {
  const requestArb = fc.record({
    method: fc.constantFrom("GET", "POST", "PUT", "DELETE"),
    path: fc.stringMatching(/^\/[a-z0-9/_.-]{0,20}(\?[a-z=&0-9]{0,10})?$/),
    headers: fc.array(fc.tuple(fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), fc.stringMatching(/^[ -~]{0,20}$/)), { maxLength: 4 }),
    body: fc.uint8Array({ maxLength: 200 }),
    framing: fc.constantFrom("length", "chunked", "none"),
    chunkSizes: fc.array(fc.integer({ min: 1, max: 64 }), { maxLength: 8 }),
  });
  type Req = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

  function encode(r: Req): { bytes: Buffer; body: Buffer; headers: string[] } {
    const body = r.framing === "none" ? Buffer.alloc(0) : Buffer.from(r.body);
    // A generated name may collide with a framing field: those are the test's to set.
    const own = r.headers.filter(([n]) => !["content-length", "transfer-encoding", "host", "expect", "connection"].includes(n));
    const headers = ["host", "example"];
    for (const [n, v] of own) headers.push(n, v.trim());
    let head = `${r.method} ${r.path} HTTP/1.1\r\nhost: example\r\n${own.map(([n, v]) => `${n}: ${v}\r\n`).join("")}`;
    let framed: Buffer;
    if (r.framing === "length") {
      head += `content-length: ${body.length}\r\n`;
      headers.push("content-length", String(body.length));
      framed = body;
    } else if (r.framing === "chunked") {
      head += "transfer-encoding: chunked\r\n";
      headers.push("transfer-encoding", "chunked");
      const parts: Buffer[] = [];
      let at = 0;
      for (const size of r.chunkSizes) {
        if (at >= body.length) break;
        const piece = body.subarray(at, Math.min(body.length, at + size));
        parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n"));
        at += piece.length;
      }
      if (at < body.length) parts.push(Buffer.from(`${(body.length - at).toString(16)};x=y\r\n`), body.subarray(at), Buffer.from("\r\n"));
      parts.push(Buffer.from("0\r\n\r\n"));
      framed = Buffer.concat(parts);
    } else framed = Buffer.alloc(0);
    return { bytes: Buffer.concat([Buffer.from(`${head}\r\n`, "latin1"), framed]), body, headers };
  }

  test("pipelined requests split at random points parse to the same heads, bodies and ends as whole", () => {
    fc.assert(
      fc.property(fc.array(requestArb, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 12 }), (reqs, cuts) => {
        const encoded = reqs.map(encode);
        const all = Buffer.concat(encoded.map((e) => e.bytes));
        const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
        const chunks: Buffer[] = [];
        let last = 0;
        for (const p of points) {
          chunks.push(all.subarray(last, p));
          last = p;
        }
        chunks.push(all.subarray(last));
        const split = parse(chunks);
        expect(split).toEqual(parse([all]));
        expect(split.map((p) => [p.head.method, p.head.target, p.head.headers, p.body, p.ended])).toEqual(
          reqs.map((r, i) => [r.method, r.path, encoded[i]!.headers, encoded[i]!.body.toString("latin1"), true]),
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe("malformed input: each a clear error with its status", () => {
  const H = "host: a\r\n";
  const cases: [string, string[], number, RegExp][] = [
    ["no version", ["GET /\r\n\r\n"], 400, /malformed request line/],
    ["garbage", ["GARBAGE\r\n\r\n"], 400, /malformed request line/],
    ["a bad method", ["G@T / HTTP/1.1\r\n\r\n"], 400, /bad method/],
    ["a space in the target", ["GET /a b HTTP/1.1\r\n\r\n"], 400, /no HTTP version|malformed/],
    ["HTTP/2.0", ["GET / HTTP/2.0\r\n\r\n"], 505, /version not supported/],
    ["HTTP/1.1 without Host", ["GET / HTTP/1.1\r\n\r\n"], 400, /without a Host/],
    ["two Hosts", [`GET / HTTP/1.1\r\n${H}${H}\r\n`], 400, /more than one Host/],
    ["a Host that would move the path", ["GET / HTTP/1.1\r\nhost: a/b\r\n\r\n"], 400, /bad Host header/],
    ["obs-fold", [`GET / HTTP/1.1\r\n${H}x: 1\r\n 2\r\n\r\n`], 400, /obsolete line folding/],
    ["space before the colon", [`GET / HTTP/1.1\r\n${H}x : 1\r\n\r\n`], 400, /bad header name/],
    ["no colon", [`GET / HTTP/1.1\r\n${H}nocolon\r\n\r\n`], 400, /malformed header line/],
    ["a bare CR in a value", [`GET / HTTP/1.1\r\n${H}x: a\rb\r\n\r\n`], 400, /control character in the value of x/],
    ["a NUL in a value", [`GET / HTTP/1.1\r\n${H}x: a\u0000b\r\n\r\n`], 400, /control character/],
    ["a bad content-length", [`POST / HTTP/1.1\r\n${H}content-length: 1x\r\n\r\n`], 400, /bad content-length/],
    ["a negative content-length", [`POST / HTTP/1.1\r\n${H}content-length: -1\r\n\r\n`], 400, /bad content-length/],
    ["two different content-lengths", [`POST / HTTP/1.1\r\n${H}content-length: 1\r\ncontent-length: 2\r\n\r\n`], 400, /two different content-length/],
    ["content-length and chunked", [`POST / HTTP/1.1\r\n${H}content-length: 1\r\ntransfer-encoding: chunked\r\n\r\n`], 400, /both transfer-encoding and content-length/],
    ["chunked not last", [`POST / HTTP/1.1\r\n${H}transfer-encoding: chunked, gzip\r\n\r\n`], 400, /does not end in chunked/],
    ["gzip then chunked", [`POST / HTTP/1.1\r\n${H}transfer-encoding: gzip, chunked\r\n\r\n`], 501, /not supported/],
    ["transfer-encoding in HTTP/1.0", ["POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n"], 400, /HTTP\/1\.0/],
    ["an unknown expectation", [`POST / HTTP/1.1\r\n${H}expect: tea\r\n\r\n`], 417, /unsupported expectation/],
    ["a bad chunk size", [`POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\nzz\r\n`], 400, /bad chunk size/],
    ["an empty chunk size", [`POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n\r\n`], 400, /empty chunk-size line/],
    ["chunk data longer than declared", [`POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1\r\nab\r\n`], 400, /longer than its declared size/],
    ["a bare LF in the chunked framing", [`POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1\na\r\n`], 400, /does not end in CRLF/],
  ];
  for (const [name, input, status, message] of cases) {
    test(`${name}: ${status}`, () => {
      const err = errorOf(input);
      expect(err.status).toBe(status);
      expect(err.message).toMatch(message);
    });
  }
});

describe("limits", () => {
  const small: RequestLimits = { maxHeadBytes: 256, maxRequestLineBytes: 64, maxHeaders: 3, maxBodyBytes: 10 };
  test("a request line past its limit is 414, even before its end arrives", () => {
    expect(errorOf([`GET /${"a".repeat(100)}`], small).status).toBe(414);
  });
  test("a head past its limit is 431, even before its end arrives", () => {
    const err = errorOf(["GET / HTTP/1.1\r\n", `x: ${"y".repeat(300)}`], small);
    expect([err.status, err.message]).toEqual([431, "the request head exceeds 256 bytes"]);
  });
  test("more header fields than allowed is 431", () => {
    expect(errorOf(["GET / HTTP/1.1\r\nhost: a\r\na: 1\r\nb: 2\r\nc: 3\r\n\r\n"], small).message).toBe("more than 3 header fields");
  });
  test("a declared body past the limit is 413 at the head; a chunked one when its sizes pass it", () => {
    expect(errorOf(["POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 11\r\n\r\n"], small).status).toBe(413);
    const err = errorOf(["POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n8\r\n12345678\r\n3\r\n"], small);
    expect([err.status, err.message]).toEqual([413, "the request body exceeds 10 bytes"]);
  });
  test("a chunked body of exactly the limit is accepted, also on the second request of a connection", () => {
    const req = "POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n5\r\n12345\r\n5\r\n67890\r\n0\r\n\r\n";
    expect(parse([req, req], small)).toHaveLength(2);
  });
  test("a chunk-size line may carry up to 8 KiB of extensions", () => {
    const ext = `;e=${"x".repeat(7_900)}`;
    const req = `POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n3${ext}\r\nabc\r\n0\r\n\r\n`;
    expect(parse([req])).toHaveLength(1);
    expect(() => parse([req.replace(ext, `;e=${"x".repeat(8_200)}`)])).toThrow("exceeds 8 KiB");
  });
  test("the defaults: 16 KiB of head, 8 KiB of request line, 100 fields, 64 MiB of body", () => {
    expect(DEFAULT_REQUEST_LIMITS).toEqual({ maxHeadBytes: 16384, maxRequestLineBytes: 8192, maxHeaders: 100, maxBodyBytes: 64 * 1024 * 1024 });
  });
});
