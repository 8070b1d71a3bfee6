import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { fileNameToKey, isLeaseFileName, isRecordFileName, keyToFileName, leaseFileName, MAX_FILE_NAME_BYTES } from "./file-names.ts";
import { keys } from "./keys.ts";

// Keys as the builders make them, from arbitrary (including non-ASCII and '/'-bearing) ids.
const keyArb = fc
  .tuple(
    fc.constantFrom("dynamo", "ns1", "a.b-c_d"),
    fc.constantFrom("worker", "agent", "attachment") as fc.Arbitrary<"worker" | "agent" | "attachment">,
    fc.string({ minLength: 1, maxLength: 20, unit: "grapheme" }).filter((s) => !/[\u0000-\u001f\u007f]/.test(s)),
  )
  .map(([ns, kind, id]) => keys[kind](ns, id));

describe("key ↔ filename", () => {
  test("round-trips, and a name is always one safe path component", () => {
    fc.assert(
      fc.property(keyArb, (key) => {
        // Multi-code-point graphemes escape to many bytes: a key past the filename budget must be
        // refused with the stable code, never truncated or written.
        let name: string;
        try {
          name = keyToFileName(key);
        } catch (err) {
          expect((err as { code?: string }).code).toBe("DISCOVERY_KEY_TOO_LONG");
          return;
        }
        expect(name).toMatch(/^(?:[A-Za-z0-9_-]|%[0-9A-F]{2})(?:[A-Za-z0-9_.-]|%[0-9A-F]{2})*\.json$/);
        expect(fileNameToKey(name)).toBe(key);
      }),
      { numRuns: 300, seed: 20261202 },
    );
  });

  test("'/' and '..' in a key never reach the filesystem as path syntax", () => {
    const name = keyToFileName("dynamo/workers/../../etc");
    expect(name).toBe("dynamo%2Fworkers%2F..%2F..%2Fetc.json");
    expect(name.includes("/")).toBe(false);
  });

  test("decoding rejects names we would not have written", () => {
    for (const name of [
      ".tmp-abc-1", // temp file
      ".hidden.json",
      "dynamo%2Fworkers%2Fw", // no suffix
      "dynamo%2fworkers%2fw.json", // lowercase escape (non-canonical)
      "%64ynamo%2Fworkers%2Fw.json", // escaped safe character (non-canonical)
      "dynamo%2Fworkers w.json", // raw space
      "dynamo%2F%FF.json", // invalid UTF-8
      "..%2Fetc%2Fpasswd.json", // decodes to an invalid key
      "dynamo.json", // decodes to a key with one segment
    ]) {
      expect(fileNameToKey(name)).toBeUndefined();
    }
  });

  test("a key too long for a filename is refused with the limit named", () => {
    expect(() => keyToFileName(keys.worker("dynamo", "x".repeat(MAX_FILE_NAME_BYTES)))).toThrow(
      new RegExp(`encodes to a \\d+-byte filename; the file backend allows ${MAX_FILE_NAME_BYTES}`),
    );
  });

  test("a real intent key (CacheOwner id, long namespace) fits", () => {
    const owner = `${"a".repeat(32)}:${"b".repeat(32)}/${"c".repeat(16)}/${"d".repeat(32)}`;
    const key = keys.intent("n".repeat(64), owner, "0123456789abcdef-r7");
    expect(fileNameToKey(keyToFileName(key))).toBe(key);
  });

  test("a lease file name is per owner and TTL, never a record name, never a path", () => {
    const name = leaseFileName("0123abcd", 10_000);
    expect(name).toBe(".lease-0123abcd-10000.json");
    expect(leaseFileName("0123abcd", 1500.5)).toBe(".lease-0123abcd-1500_5.json");
    expect(isLeaseFileName(name)).toBe(true);
    expect(isRecordFileName(name)).toBe(false);
    expect(fileNameToKey(name)).toBeUndefined();
    for (const bad of [".lease-../x.json", "lease-a-1.json", ".lease-.json", ".lease-a/b-1.json", ".tmp-a-1"]) expect(isLeaseFileName(bad)).toBe(false);
    expect(() => leaseFileName("a/b", 1)).toThrow(/lease name/);
  });
});
