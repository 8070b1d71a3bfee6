import { describe, expect, test } from "bun:test";
import { encodeLease, encodeRecord, LEASE_FORMAT, LEASED_RECORD_FORMAT, parseLease, parseRecord, serialiseValue } from "./file-record.ts";

const KEY = "dynamo/workers/w";
const META = { format: LEASED_RECORD_FORMAT, key: KEY, owner: { pid: 42, instanceId: "abcd" }, revision: 3, leaseTtlMs: 1000, leaseExpiresAtMs: 0, lease: ".lease-abcd-1000.json" } as const;

describe("record envelope", () => {
  test("encode → parse round-trips the payload and metadata", () => {
    const value = { a: [1, "x", null, { b: true }], s: 'q"uote\n' };
    const parsed = parseRecord(encodeRecord(META, serialiseValue(value) as string), KEY);
    expect(parsed).toEqual({ ok: true, record: { ...META, value } });
  });

  test("values without a JSON form are refused", () => {
    expect(serialiseValue(1n)).toBeUndefined();
    expect(serialiseValue(undefined)).toBeUndefined();
    expect(serialiseValue(() => 1)).toBeUndefined();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(serialiseValue(cyclic)).toBeUndefined();
    expect(serialiseValue(null)).toBe("null");
  });

  const good = JSON.parse(encodeRecord(META, '"v"')) as Record<string, unknown>;
  const cases: [string, string, RegExp][] = [
    ["truncated", encodeRecord(META, '"v"').slice(0, 30), /not valid JSON/],
    ["array", "[]", /not a JSON object/],
    ["null", "null", /not a JSON object/],
    ["format", JSON.stringify({ ...good, format: "x" }), /format is "x"/],
    ["key", JSON.stringify({ ...good, key: "dynamo/workers/other" }), /does not match its filename/],
    ["no value", JSON.stringify({ ...good, value: undefined }), /value is missing/],
    ["no owner", JSON.stringify({ ...good, owner: undefined }), /owner is missing/],
    ["pid", JSON.stringify({ ...good, owner: { pid: -1, instanceId: "a" } }), /owner.pid/],
    ["instance", JSON.stringify({ ...good, owner: { pid: 1, instanceId: "" } }), /owner.instanceId/],
    ["revision", JSON.stringify({ ...good, revision: 0 }), /revision/],
    ["ttl", JSON.stringify({ ...good, leaseTtlMs: "10" }), /leaseTtlMs/],
    ["the retired v1 format", JSON.stringify({ ...good, format: "kvcr-discovery-record/v1", leaseExpiresAtMs: 1 }), /format is "kvcr-discovery-record\/v1"/],
  ];
  for (const [name, text, problem] of cases) {
    test(`malformed (${name}) is reported, not thrown`, () => {
      const parsed = parseRecord(text, KEY);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.problem).toMatch(problem);
    });
  }
});

describe("record on a process lease (v2) and the lease file", () => {
  const lease = ".lease-abcd-1000.json";
  const V2 = { format: LEASED_RECORD_FORMAT, key: KEY, owner: { pid: 42, instanceId: "abcd" }, revision: 2, leaseTtlMs: 1000, leaseExpiresAtMs: 0, lease } as const;

  test("the expiry is not in the record's text", () => {
    expect(JSON.parse(encodeRecord(V2, '{"a":1}'))).not.toHaveProperty("leaseExpiresAtMs");
  });

  test("encode → parse round-trips, the expiry 0 until read from the lease", () => {
    expect(parseRecord(encodeRecord(V2, '{"a":1}'), KEY)).toEqual({ ok: true, record: { ...V2, value: { a: 1 } } });
  });

  const good = JSON.parse(encodeRecord(V2, '"v"')) as Record<string, unknown>;
  for (const [name, value] of [["missing", undefined], ["a path", "../../etc/passwd"], ["a record name", "dynamo%2Fworkers%2Fw.json"], ["not a string", 7]] as const) {
    test(`a lease that is ${name} is reported, not followed`, () => {
      const parsed = parseRecord(JSON.stringify({ ...good, lease: value }), KEY);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.problem).toMatch(/lease .* is not a lease file name/);
    });
  }

  const leaseMeta = { owner: { pid: 42, instanceId: "abcd" }, leaseTtlMs: 1000, leaseExpiresAtMs: 1_700_000_000_000 };

  test("lease file: encode → parse round-trips", () => {
    expect(parseLease(encodeLease(leaseMeta))).toEqual({ ok: true, lease: { format: LEASE_FORMAT, ...leaseMeta } });
  });

  test("lease file: a malformed one is reported, naming the problem", () => {
    const cases: [string, string, RegExp][] = [
      ["truncated", encodeLease(leaseMeta).slice(0, 20), /not valid JSON/],
      ["array", "[]", /not a JSON object/],
      ["format", JSON.stringify({ format: LEASED_RECORD_FORMAT, ...leaseMeta }), /format is/],
      ["owner", JSON.stringify({ format: LEASE_FORMAT, ...leaseMeta, owner: { pid: 1 } }), /owner.instanceId/],
      ["expiry", JSON.stringify({ format: LEASE_FORMAT, ...leaseMeta, leaseExpiresAtMs: "soon" }), /leaseExpiresAtMs/],
    ];
    for (const [name, text, problem] of cases) {
      const parsed = parseLease(text);
      expect(parsed.ok, name).toBe(false);
      if (!parsed.ok) expect(parsed.problem, name).toMatch(problem);
    }
  });
});
