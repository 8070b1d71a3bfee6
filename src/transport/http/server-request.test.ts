// The request an app gets: Request's interface (instanceof, URL, method, headers in order and
// joined as Headers joins them), every way to read the body (whole or still arriving), a body read
// once only, the signal aborted before or after it was first asked for, and a native copy.
import { describe, expect, test } from "bun:test";
import { bodyBytesInHand, onClientGone, ServerRequest } from "./server-request.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const streamOf = (...parts: string[]) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of parts) c.enqueue(bytes(p));
      c.close();
    },
  });
const post = (content: Uint8Array | ReadableStream<Uint8Array> | undefined, fields: string[] = ["host", "a", "x-n", "1", "x-n", "2"]) =>
  new ServerRequest("POST", "http://a/v1/x?q=1", fields, content);

describe("what an app reads", () => {
  test("is a Request: method, URL, headers (repeats joined), Request's defaults", () => {
    const req = post(undefined);
    expect(req).toBeInstanceOf(Request);
    expect([req.method, req.url, new URL(req.url).pathname]).toEqual(["POST", "http://a/v1/x?q=1", "/v1/x"]);
    expect([req.headers.get("x-n"), req.headers.get("host"), req.headers.get("missing")]).toEqual(["1, 2", "a", null]);
    expect(req.headers).toBe(req.headers); // made once
    expect([req.cache, req.credentials, req.mode, req.redirect, req.keepalive]).toEqual(["default", "same-origin", "cors", "follow", false]);
  });

  for (const [name, content] of [
    ["a whole body", () => bytes('{"a":[1,2]}')],
    ["a body still arriving", () => streamOf('{"a":', "[1,2]}")],
  ] as const) {
    test(`${name}: text, json, bytes, arrayBuffer and the body stream each read it, once`, async () => {
      expect(await post(content()).text()).toBe('{"a":[1,2]}');
      expect(await post(content()).json()).toEqual({ a: [1, 2] });
      expect(new TextDecoder().decode(await post(content()).bytes())).toBe('{"a":[1,2]}');
      expect(new TextDecoder().decode(await post(content()).arrayBuffer())).toBe('{"a":[1,2]}');
      expect(await new Response(post(content()).body).text()).toBe('{"a":[1,2]}');
      const once = post(content());
      expect(once.bodyUsed).toBe(false);
      await once.text();
      expect(once.bodyUsed).toBe(true);
      await expect(once.text()).rejects.toThrow("Body already used");
    });
  }

  test("no body: body is null and the reads give nothing", async () => {
    const req = new ServerRequest("GET", "http://a/", [], undefined);
    expect(req.body).toBeNull();
    expect(await req.text()).toBe("");
    expect((await new ServerRequest("GET", "http://a/", [], undefined).bytes()).length).toBe(0);
  });

  test("json of a body that is not JSON rejects, as Request's does", async () => {
    await expect(post(bytes("{nope")).json()).rejects.toThrow(SyntaxError);
  });

  test("a read of the stream counts as using the body", async () => {
    const req = post(streamOf("abc"));
    const reader = req.body!.getReader();
    expect((await reader.read()).value).toEqual(bytes("abc"));
    expect(req.bodyUsed).toBe(true);
    await expect(req.json()).rejects.toThrow("Body already used");
  });
});

describe("the signal", () => {
  test("aborts with the reason given, whether first asked for before or after the abort", () => {
    const early = post(undefined);
    const signal = early.signal;
    expect(signal.aborted).toBe(false);
    early.abort(new Error("client left"));
    expect([signal.aborted, (signal.reason as Error).message]).toEqual([true, "client left"]);

    const late = post(undefined);
    late.abort(new Error("client left"));
    late.abort(new Error("second reason ignored"));
    expect([late.signal.aborted, (late.signal.reason as Error).message]).toEqual([true, "client left"]);
  });
});

describe("a native copy", () => {
  test("clone() gives a native Request with the same method, URL, headers and body; both read it", async () => {
    const req = post(streamOf("hello ", "world"));
    const copy = req.clone();
    expect(copy).toBeInstanceOf(Request);
    expect([copy.method, copy.url, copy.headers.get("x-n")]).toEqual(["POST", "http://a/v1/x?q=1", "1, 2"]);
    expect(await copy.text()).toBe("hello world");
    expect(await req.text()).toBe("hello world");
  });

  test("formData and blob read through a native Request; textStream decodes chunk by chunk", async () => {
    const form = new ServerRequest("POST", "http://a/", ["content-type", "application/x-www-form-urlencoded"], bytes("a=1&b=two"));
    expect((await form.formData()).get("b")).toBe("two");
    expect(await (await post(bytes("blob!")).blob()).text()).toBe("blob!");
    let text = "";
    for await (const piece of post(streamOf("a", "é")).textStream()) text += piece;
    expect(text).toBe("aé");
  });
});

describe("bodyBytesInHand", () => {
  test("the size of a whole unread body (0 without one); nothing once read, for a body still arriving, or for a native Request", async () => {
    const whole = post(bytes('{"é":1}'));
    expect(bodyBytesInHand(whole)).toBe(8); // é is two bytes
    expect(bodyBytesInHand(post(undefined))).toBe(0);
    await whole.text();
    expect(bodyBytesInHand(whole)).toBeUndefined();
    const streamed = post(bytes("abc"));
    void streamed.body;
    expect(bodyBytesInHand(streamed)).toBeUndefined();
    expect(bodyBytesInHand(post(streamOf("abc")))).toBeUndefined();
    expect(bodyBytesInHand(new Request("http://a/", { method: "POST", body: "abc" }))).toBeUndefined();
  });
});

describe("onClientGone", () => {
  test("ours: runs once at the abort (registered before it) or at once (after it); the signal, made later, agrees", () => {
    const req = post(undefined);
    const calls: string[] = [];
    onClientGone(req, () => calls.push("early"));
    expect(calls).toEqual([]);
    req.abort(new Error("left"));
    req.abort(new Error("again"));
    onClientGone(req, () => calls.push("late"));
    expect(calls).toEqual(["early", "late"]);
    expect(req.signal.aborted).toBe(true);
  });

  test("a native Request: through its signal, once, and at once when already aborted", () => {
    const ctrl = new AbortController();
    const req = new Request("http://a/", { signal: ctrl.signal });
    let n = 0;
    onClientGone(req, () => n++);
    ctrl.abort();
    ctrl.abort();
    onClientGone(req, () => n++);
    expect(n).toBe(2);
  });
});
