// A pushed body (DirectResponse) on the wire, with raw sockets: written whole during its pull it
// goes out with its length; pushed later, chunk by chunk as written; HTTP/1.0 until close; HEAD
// without a body; a source that breaks off shows as a cut body; a client that leaves cancels the
// source. Outside the server it is an ordinary Response whose body is Bun's direct stream.
import { describe, expect, test } from "bun:test";
import { cleanupList, waitFor } from "../../../test/harness.ts";
import { rawServerKit } from "../../../test/raw-http.ts";
import { directResponse, type DirectSink, type DirectSource } from "./direct-response.ts";

const cleanups = cleanupList();
const { serve, open } = rawServerKit(cleanups);
const NDJSON = { "content-type": "application/x-ndjson" };
const encoder = new TextEncoder();

/** A source the test writes to: `sink` once pulled, `end` settles the pull, `cancelled` counts cancels. */
function pushed(): DirectSource & { sink?: DirectSink; end(fail?: boolean): void; cancelled: number } {
  let settle: ((fail: boolean) => void) | undefined;
  const s = {
    sink: undefined as DirectSink | undefined,
    cancelled: 0,
    pull(sink: DirectSink) {
      s.sink = sink;
      return new Promise<void>((resolve, reject) => (settle = (fail) => (fail ? reject(new Error("broke off")) : resolve())));
    },
    cancel: () => void s.cancelled++,
    end: (fail = false) => settle?.(fail),
  };
  return s;
}

describe("through the server", () => {
  test("written and closed during its pull: one answer with its length", async () => {
    const server = serve(() => directResponse({ pull: (sink) => void (sink.write("a\n"), sink.write(encoder.encode("b\n")), sink.close()), cancel: () => {} }, { headers: NDJSON }));
    const c = await open(server);
    c.write("GET /x HTTP/1.1\r\nhost: test\r\n\r\n");
    const [res] = await c.waitForResponses(1);
    expect([res!.status, res!.body, res!.headers.get("content-length"), res!.headers.has("transfer-encoding")]).toEqual([200, "a\nb\n", "4", false]);
  });

  test("pushed later: chunked, each chunk as written (a reused buffer's view is copied), the last chunk at close; the connection carries the next request", async () => {
    const src = pushed();
    const server = serve((req) => (new URL(req.url).pathname === "/s" ? directResponse(src, { headers: NDJSON }) : new Response("next")));
    const c = await open(server);
    c.write("GET /s HTTP/1.1\r\nhost: test\r\n\r\n");
    await waitFor(() => src.sink !== undefined && c.text.includes("\r\n\r\n"), { what: "the head" });
    expect(c.text).toContain("transfer-encoding: chunked");
    const buf = encoder.encode("one\n");
    expect(src.sink!.copiesChunks).toBe(true);
    src.sink!.write(buf);
    buf.set(encoder.encode("XXX\n")); // the view was copied when it was written
    await waitFor(() => c.text.includes("one\n"), { what: "the first chunk" });
    src.sink!.write("");
    src.sink!.write("two\n");
    src.sink!.close();
    const [res] = await c.waitForResponses(1);
    expect(res!.body).toBe("one\ntwo\n");
    expect(c.text).toEndWith("0\r\n\r\n");
    c.write("GET /n HTTP/1.1\r\nhost: test\r\n\r\n");
    const [, next] = await c.waitForResponses(2);
    expect(next!.body).toBe("next");
  });

  test("the pull settling ends the body: resolved as a close, rejected as a cut (no last chunk, the connection ends)", async () => {
    for (const fail of [false, true]) {
      const src = pushed();
      const server = serve(() => directResponse(src, { headers: NDJSON }));
      const c = await open(server);
      c.write("GET /s HTTP/1.1\r\nhost: test\r\n\r\n");
      await waitFor(() => src.sink !== undefined && c.text.includes("\r\n\r\n"), { what: "the head" });
      src.sink!.write("x\n");
      await waitFor(() => c.text.includes("x\n"), { what: "the chunk" });
      src.end(fail);
      if (fail) {
        await c.waitForClose();
        expect(c.text).not.toContain("0\r\n\r\n");
      } else {
        await waitFor(() => c.text.endsWith("0\r\n\r\n"), { what: "the last chunk" });
      }
    }
  });

  test("HTTP/1.0: the body runs until the connection closes, unframed", async () => {
    const src = pushed();
    const server = serve(() => directResponse(src, { headers: NDJSON }));
    const c = await open(server);
    c.write("GET /s HTTP/1.0\r\n\r\n");
    await waitFor(() => src.sink !== undefined, { what: "the pull" });
    src.sink!.write("a\n");
    src.sink!.close();
    await c.waitForClose();
    expect(c.text).toMatch(/connection: close\r\n\r\na\n$/);
    expect(c.text).not.toContain("transfer-encoding");
  });

  test("HEAD: the head alone, the source cancelled unpulled", async () => {
    const src = pushed();
    const server = serve(() => directResponse(src, { headers: NDJSON }));
    const c = await open(server);
    c.write("HEAD /s HTTP/1.1\r\nhost: test\r\n\r\n");
    await waitFor(() => c.text.includes("\r\n\r\n"), { what: "the head" });
    expect(src.sink).toBeUndefined();
    expect(src.cancelled).toBe(1);
  });

  test("a pull that throws before writing drops the connection; a client that leaves mid-body cancels the source", async () => {
    const server = serve(() => directResponse({ pull: () => { throw new Error("no"); }, cancel: () => {} }, { headers: NDJSON }));
    const c = await open(server);
    c.write("GET /s HTTP/1.1\r\nhost: test\r\n\r\n");
    await c.waitForClose();
    expect(c.text).toBe("");
    const src = pushed();
    const server2 = serve(() => directResponse(src, { headers: NDJSON }));
    const c2 = await open(server2);
    c2.write("GET /s HTTP/1.1\r\nhost: test\r\n\r\n");
    await waitFor(() => src.sink !== undefined && c2.text.includes("\r\n\r\n"), { what: "the head" });
    c2.destroy();
    await waitFor(() => src.cancelled === 1, { what: "the cancel" });
  });
});

describe("outside the server", () => {
  test("a Response whose body is Bun's direct stream over the source; once asked for, the server cannot take it", async () => {
    const res = directResponse({ pull: (sink) => void (sink.write("a"), sink.flush(), sink.write("b"), sink.close()), cancel: () => {} }, { status: 201, headers: { "Content-Type": "application/x-ndjson" } });
    expect(res instanceof Response).toBe(true);
    expect([res.status, res.ok, res.headers.get("content-type")]).toEqual([201, true, "application/x-ndjson"]);
    expect(res.body).toBeInstanceOf(ReadableStream);
    expect(res.take()).toBeUndefined();
    expect(await res.text()).toBe("ab");
    expect(res.bodyUsed).toBe(true);
    expect(() => res.text()).toThrow("Body already used");
  });

  test("taken by a server, the body is used: nobody else reads it", () => {
    const res = directResponse({ pull: () => {}, cancel: () => {} });
    expect(res.take()).toBeDefined();
    expect(res.bodyUsed).toBe(true);
    expect(res.take()).toBeUndefined();
  });
});
