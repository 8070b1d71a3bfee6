// The etcd client's pure helpers (key ranges, base64 keys, endpoint lists); the client against a
// real etcd and a fake gateway is tested in test/integration/discovery-etcd.test.ts.
import { describe, expect, test } from "bun:test";
import { b64, parseEndpoints, prefixRangeEnd, unb64 } from "./etcd-client.ts";

describe("etcd client helpers", () => {
  test("prefix range end increments the last byte below 0xff", () => {
    expect(unb64(prefixRangeEnd("kvcr/dynamo/"))).toBe("kvcr/dynamo0");
    expect(Buffer.from(prefixRangeEnd("a\u00ff"), "base64")).toEqual(Buffer.from([0x61, 0xc3, 0xc0]));
    expect(unb64(b64("kvcr/ns/workers/w%2F1"))).toBe("kvcr/ns/workers/w%2F1");
  });

  test("endpoints are comma-separated URLs, trimmed", () => {
    expect(parseEndpoints(" http://a:2379 ,http://b:2379/")).toEqual(["http://a:2379", "http://b:2379"]);
  });

  test("no endpoints, or bad ones, are refused naming them", () => {
    expect(() => parseEndpoints("")).toThrow(/none given; pass --etcd-endpoints/);
    expect(() => parseEndpoints("a:2379:x")).toThrow(/"a:2379:x"/);
    expect(() => parseEndpoints("ftp://a:1")).toThrow(/scheme ftp: is not supported/);
  });
});
