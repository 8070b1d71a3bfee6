// Whole answers: to anyone they are ordinary Responses (wholeJson is Response.json to the byte);
// the server sends their bytes with their true length, pipelined answers still in order, and a
// whole answer already read by someone else is what any used Response is.
import { describe, expect, test } from "bun:test";
import { cleanupList } from "../../../test/harness.ts";
import { rawServerKit } from "../../../test/raw-http.ts";
import { wholeBodyOf, wholeJson, wholeResponse } from "./whole-response.ts";

const cleanups = cleanupList();
const { serve, open } = rawServerKit(cleanups);
const bytes = (text: string) => new TextEncoder().encode(text);
const post = (path: string, body: string) => `POST ${path} HTTP/1.1\r\nhost: test\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe("as a Response", () => {
  test("is a Response: status, ok, headers (names lower-cased), and each way to read the body, once", async () => {
    const make = () => wholeResponse(bytes('{"a":[1,2]}'), { status: 404, headers: { "Content-Type": "application/json", "x-n": "1" } });
    const res = make();
    expect(res).toBeInstanceOf(Response);
    expect([res.status, res.ok, res.statusText, res.type, res.redirected, res.headers.get("content-type"), res.headers.get("x-n")]).toEqual([404, false, "", "default", false, "application/json", "1"]);
    expect(await make().text()).toBe('{"a":[1,2]}');
    expect(await make().json()).toEqual({ a: [1, 2] });
    expect(new TextDecoder().decode(await make().bytes())).toBe('{"a":[1,2]}');
    expect(new TextDecoder().decode(await make().arrayBuffer())).toBe('{"a":[1,2]}');
    expect(await new Response(make().body).text()).toBe('{"a":[1,2]}');
    expect(await (await make().blob()).text()).toBe('{"a":[1,2]}');
    const clone = res.clone();
    expect(await res.text()).toBe('{"a":[1,2]}');
    expect(res.bodyUsed).toBe(true);
    expect(res.text()).rejects.toThrow("Body already used");
    expect(() => res.clone()).toThrow("Body already used");
    expect([clone.status, await clone.text()]).toEqual([404, '{"a":[1,2]}']);
    const streamed = make();
    const reader = streamed.body.getReader();
    expect(streamed.bodyUsed).toBe(true);
    reader.releaseLock();
  });

  test("wholeJson has Response.json's status, content type and body; the app's headers are kept", async () => {
    const value = { id: "cmpl-1", choices: [{ text: "é ok" }] };
    const ours = wholeJson(value, { status: 201, headers: { "x-kvcr-worker": "w-3" } });
    const native = Response.json(value, { status: 201 });
    expect([ours.status, ours.headers.get("content-type"), ours.headers.get("x-kvcr-worker")]).toEqual([201, native.headers.get("content-type"), "w-3"]);
    expect(await ours.text()).toBe(await native.text());
  });

  test("wholeBodyOf gives the bytes of a whole Response until someone reads it, and nothing for another Response", async () => {
    const body = bytes("line\n");
    const res = wholeResponse(body, { headers: { "content-type": "application/x-ndjson" } });
    expect(wholeBodyOf(res)).toBe(body);
    expect(await res.text()).toBe("line\n");
    expect(wholeBodyOf(res)).toBeUndefined();
    const asStream = wholeResponse(body);
    void asStream.body;
    expect(wholeBodyOf(asStream)).toBeUndefined();
    expect(await asStream.text()).toBe("line\n");
    expect(wholeBodyOf(new Response(body))).toBeUndefined();
  });
});

describe("on the wire", () => {
  test("sent with its true length (an app's wrong content-length dropped), its other headers kept, pipelined answers in order", async () => {
    const c = await open(
      serve(async (req) => {
        const text = await req.text();
        await new Promise((resolve) => setTimeout(resolve, text === "slow" ? 20 : 1));
        return wholeResponse(bytes(`{"got":"${text}"}\n`), { headers: { "content-type": "application/x-ndjson", "content-length": "999", "x-kvcr-dp-rank": "1" } });
      }),
    );
    c.write(post("/a", "slow") + post("/b", "fast"));
    const rs = await c.waitForResponses(2);
    expect(rs.map((r) => r.body)).toEqual(['{"got":"slow"}\n', '{"got":"fast"}\n']);
    expect(rs.map((r) => [r.status, r.headers.get("content-length"), r.headers.get("x-kvcr-dp-rank"), r.headers.get("content-type")])).toEqual([
      [200, "15", "1", "application/x-ndjson"],
      [200, "15", "1", "application/x-ndjson"],
    ]);
  });

  test("a whole answer the app read before returning it is treated as any used Response (the connection dropped), never sent with its bytes", async () => {
    const c = await open(
      serve(async () => {
        const res = wholeResponse(bytes("stale"), { headers: { "content-type": "text/plain" } });
        await res.text();
        return res;
      }),
    );
    c.write(post("/a", ""));
    await c.waitForClose();
    expect(c.text).toBe("");
  });

  test("headers an app changed after making the answer are the ones sent", async () => {
    const c = await open(
      serve(() => {
        const res = wholeResponse(bytes("ok"), { headers: { "content-type": "text/plain", "x-a": "1" } });
        res.headers.set("x-a", "2");
        res.headers.set("connection", "close");
        return res;
      }),
    );
    c.write(post("/a", ""));
    const [r] = await c.waitForResponses(1);
    expect([r!.headers.get("x-a"), r!.headers.get("connection"), r!.body]).toEqual(["2", "close", "ok"]);
    await c.waitForClose();
  });

  test("HEAD gets the head with the body's length and no body", async () => {
    const c = await open(serve(() => wholeResponse(bytes("twelve bytes"), { headers: { "content-type": "text/plain" } })));
    c.write("HEAD /x HTTP/1.1\r\nhost: test\r\n\r\nGET /y HTTP/1.1\r\nhost: test\r\n\r\n");
    const rs = await c.waitForResponses(2);
    expect(rs[0]!.headers.get("content-length")).toBe("12");
    expect(rs[1]!.body).toBe("twelve bytes");
  });
});
