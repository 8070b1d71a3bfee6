import { describe, expect, test } from "bun:test";
import { xxh3 } from "../lib/xxh3.ts";
import { defaultOwnerParts, formatCacheOwner, indexerDomain, parseCacheOwner, rawHostProblem, rawTopic } from "./cache-owner.ts";

const hash = (d: Uint8Array, s: bigint) => xxh3(d, s);

describe("CacheOwner ids", () => {
  test("canonical format round-trips and exposes the indexer domain", () => {
    const parts = { ...defaultOwnerParts(hash, "mocker-engine", "dynamo"), ordinal: 5n };
    const id = formatCacheOwner(parts);
    expect(id).toMatch(/^[0-9a-f]{32}:[0-9a-f]{32}\/[0-9a-f]{16}\/0{31}5$/);
    expect(parseCacheOwner(id)).toEqual(parts);
    expect(indexerDomain(id)).toBe(`${parts.semantics}:${parts.scope}`);
  });

  test("defaults are deterministic and depend on model and namespace", () => {
    expect(defaultOwnerParts(hash, "m", "ns")).toEqual(defaultOwnerParts(hash, "m", "ns"));
    expect(defaultOwnerParts(hash, "m", "ns").semantics).not.toBe(defaultOwnerParts(hash, "other", "ns").semantics);
    expect(defaultOwnerParts(hash, "m", "ns").scope).not.toBe(defaultOwnerParts(hash, "m", "ns2").scope);
  });

  test("every hex digit, 0 included, in every part", () => {
    const zeros = `${"0".repeat(32)}:${"0".repeat(32)}/${"0".repeat(16)}/${"0".repeat(32)}`;
    expect(parseCacheOwner(zeros)).toEqual({ semantics: "0".repeat(32), scope: "0".repeat(32), datacenter: "0".repeat(16), ordinal: 0n });
    const mixed = `${"09af".repeat(8)}:${"1234567890abcdef".repeat(2)}/0123456789abcdef/${"0".repeat(31)}9`;
    expect(parseCacheOwner(mixed)?.ordinal).toBe(9n);
  });

  test("malformed ids do not parse", () => {
    for (const bad of ["", "abc", "A".repeat(32) + ":" + "0".repeat(32) + "/" + "0".repeat(16) + "/" + "0".repeat(32), "0".repeat(32) + ":" + "0".repeat(32) + "/" + "0".repeat(15) + "/" + "0".repeat(32)]) {
      expect(parseCacheOwner(bad)).toBeUndefined();
    }
  });

  test("raw topic is kvcr- plus 16 hex of XXH3-64 over the ids joined by commas", () => {
    const ids = ["a", "b"];
    const expected = `kvcr-${xxh3(new TextEncoder().encode("a,b"), 0n).toString(16).padStart(16, "0")}`;
    expect(rawTopic(hash, ids)).toBe(expected);
    expect(rawTopic(hash, ids)).toHaveLength(21);
  });
});

describe("raw host", () => {
  test.each(["127.0.0.1", "10.1.2.3", "worker-7.cluster.local", "node1", "[::1]", "[fd00::1]", "a", "9", "h9", "a5b", "x9.y5z", "n-8.n-9", "a.b2", "a".repeat(63), `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`])("accepts %s", (host) => {
    expect(rawHostProblem(host)).toBeUndefined();
  });
  test.each([
    ["", "must not be empty"],
    ["*", "wildcard"],
    ["0.0.0.0", "wildcard"],
    ["::", "wildcard"],
    ["localhost", "localhost is ambiguous"],
    ["tcp://10.0.0.1", "without a scheme"],
    ["10.0.0.1:5557", "must not include a port"],
    ["host/path", "without a path"],
    ["fd00::1", "must be bracketed"],
    ["[fd00::1]:80", "bracketed IPv6"],
    ["300.1.1.1", "not a valid IPv4"],
    ["bad_host!", "is not a hostname"],
    ["a".repeat(64), "is not a hostname"],
    [`${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`, "is not a hostname"],
  ])("rejects %p", (host, reason) => {
    expect(rawHostProblem(host)).toContain(reason);
  });
});
