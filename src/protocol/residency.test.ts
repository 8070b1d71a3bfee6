// The residency shape shared by the mocker's truth, the agent's snapshot and the frontend's index.
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { blockSetOf, prefixOverlap, residencyBlocks, ResidencySchema } from "./residency.ts";

const holder = {
  worker_id: "w-0",
  dp_rank: 1,
  seq: 7,
  url: "http://127.0.0.1:1/v1/generate",
  tiers: { device: [{ seq_hash: "1", local_hash: "11" }, { seq_hash: "2", local_hash: "12" }], host: [{ seq_hash: "3", local_hash: "13" }], disk: [] },
};

describe("residency", () => {
  test("the shape validates, with u64 decimal strings only", () => {
    expect(v.safeParse(ResidencySchema, { sources: [holder] }).success).toBe(true);
    expect(v.safeParse(ResidencySchema, { sources: [{ ...holder, seq: undefined, cursor: 4 }] }).success).toBe(true);
    const bad = { ...holder, tiers: { ...holder.tiers, host: [{ seq_hash: "0x3", local_hash: "1" }] } };
    expect(v.safeParse(ResidencySchema, { sources: [bad] }).success).toBe(false);
  });

  test("u64 strings: 0, no leading zero, at most 20 digits", () => {
    const ok = (seq_hash: string) => v.safeParse(ResidencySchema, { sources: [{ ...holder, tiers: { ...holder.tiers, disk: [{ seq_hash, local_hash: "1" }] } }] }).success;
    expect([ok("0"), ok("18446744073709551615"), ok("10000000000000000000")]).toEqual([true, true, true]);
    expect([ok("01"), ok("00"), ok("184467440737095516150"), ok("")]).toEqual([false, false, false, false]);
  });

  test("blockSetOf: one tier or all of them", () => {
    expect([...blockSetOf(holder, "device")]).toEqual(["1", "2"]);
    expect([...blockSetOf(holder)].sort()).toEqual(["1", "2", "3"]);
    expect(blockSetOf(holder, "disk").size).toBe(0);
  });

  test("residencyBlocks sorts by seq hash as u64, not as text", () => {
    expect(residencyBlocks([[10n, 1n], [9n, 2n], [18446744073709551615n, 3n]]).map((b) => b.seq_hash)).toEqual(["9", "10", "18446744073709551615"]);
  });

  test("prefixOverlap: device prefix, then the host run after it, then disk", () => {
    const sets = { device: new Set(["a", "b"]), host: new Set(["c", "a"]), disk: new Set(["d"]) };
    const holds = { device: (h: string) => sets.device.has(h), host: (h: string) => sets.host.has(h), disk: (h: string) => sets.disk.has(h) };
    expect(prefixOverlap(["a", "b", "c", "d", "e"], holds)).toEqual({ device: 2, host: 1, disk: 1 });
    expect(prefixOverlap(["c", "a", "b"], holds)).toEqual({ device: 0, host: 2, disk: 0 });
    expect(prefixOverlap(["x", "a"], holds)).toEqual({ device: 0, host: 0, disk: 0 });
  });
});
