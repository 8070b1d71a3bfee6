import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { escapeSegment, keys, parseKey, unescapeSegment, validateKey, validateNamespace } from "./keys.ts";

const OWNER = "0123456789abcdef0123456789abcdef:fedcba9876543210fedcba9876543210/00000000000000aa/0000000000000000000000000000002a";

describe("discovery keys", () => {
  test("builders lay keys out as namespace/kind/ids", () => {
    expect(keys.worker("dynamo", "w-1")).toBe("dynamo/workers/w-1");
    expect(keys.agent("dynamo", "host")).toBe("dynamo/agents/host");
    expect(keys.attachment("ns", "a/b")).toBe("ns/attachments/a%2Fb");
    expect(keys.intent("ns", "a/b", "w0")).toBe("ns/intents/a%2Fb/w0");
    expect(keys.intentsFor("ns", "a/b")).toBe("ns/intents/a%2Fb/");
    expect(keys.namespacePrefix("ns")).toBe("ns/");
    expect(keys.kindPrefix("ns", "intent")).toBe("ns/intents/");
  });

  test("a CacheOwner id with '/' and ':' stays one segment and parses back", () => {
    const key = keys.intent("dynamo", OWNER, "worker-3");
    expect(key.split("/").length).toBe(4);
    expect(parseKey(key)).toEqual({ namespace: "dynamo", kind: "intent", ids: [OWNER, "worker-3"] });
    expect(keys.intent("dynamo", OWNER, "w").startsWith(keys.intentsFor("dynamo", OWNER))).toBe(true);
  });

  test("segment escaping round-trips any string", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, unit: "binary" }), (s) => {
        const escaped = escapeSegment(s);
        expect(escaped.includes("/")).toBe(false);
        expect(unescapeSegment(escaped)).toBe(s);
      }),
      { numRuns: 300 },
    );
    expect(unescapeSegment(escapeSegment("%2F"))).toBe("%2F");
    expect(() => escapeSegment("")).toThrow(/segment is empty/);
  });

  test("prefixes of one namespace never match another (ns1 vs ns10)", () => {
    expect(keys.worker("ns10", "w").startsWith(keys.namespacePrefix("ns1"))).toBe(false);
  });

  test("parseKey reports an unknown kind as undefined", () => {
    expect(parseKey("dynamo/other/x")).toEqual({ namespace: "dynamo", kind: undefined, ids: ["x"] });
  });

  test("namespaces are validated with a message naming the value", () => {
    expect(validateNamespace("team-a_1.x")).toBe("team-a_1.x");
    for (const bad of ["", "-x", ".", "..", "a/b", "a b", "x".repeat(65), "ü"]) {
      expect(() => validateNamespace(bad)).toThrow(`namespace: ${JSON.stringify(bad)} is invalid`);
    }
    expect(() => keys.worker("a/b", "w")).toThrow(/namespace/);
  });


  test("validateKey names the problem", () => {
    expect(() => validateKey("")).toThrow(/empty/);
    expect(() => validateKey("dynamo")).toThrow(/at least a namespace and one more segment/);
    expect(() => validateKey("/dynamo/x")).toThrow(/empty segment/);
    expect(() => validateKey("dynamo/x/")).toThrow(/empty segment/);
    expect(() => validateKey("dynamo/x\u0007")).toThrow(/control character/);
    expect(() => validateKey(`dynamo/${"x".repeat(1100)}`)).toThrow(/longer than 1024/);
    expect(() => validateKey("../x")).toThrow(/valid namespace/);
    expect(validateKey("dynamo/workers/w")).toBe("dynamo/workers/w");
  });
});
