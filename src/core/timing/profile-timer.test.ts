import { describe, expect, test } from "bun:test";
import { ProfileRangeError, ProfileTimer } from "./profile-timer.ts";
import { profileStepMs, type TimingConfig } from "./timing-model.ts";
import { sampleProfile } from "../../../test/timing-profile-kit.ts";

describe("profile timer", () => {
  const timer = (extrapolate = false, warn?: (m: string) => void) => new ProfileTimer(sampleProfile(), { extrapolate, ...(warn ? { warn } : {}) });

  test("grid points read exactly; between them bilinear (exact for a plane)", () => {
    const t = timer();
    expect(t.prefillMs(100, 1000)).toBeCloseTo(10 + 1 + 1, 12);
    expect(t.prefillMs(550, 2500)).toBeCloseTo(10 + 5.5 + 2.5, 12);
    expect(t.decodeMs(4, 4 * 1000)).toBeCloseTo(5 + 4 + 1, 12);
    expect(t.decodeMs(10, 10 * 2500)).toBeCloseTo(5 + 10 + 2.5, 12);
  });

  test("nothing to do costs nothing; below the first point the first point holds", () => {
    const t = timer();
    expect(t.prefillMs(0, 0)).toBe(0);
    expect(t.decodeMs(0, 0)).toBe(0);
    expect(t.decodeMs(1, 10)).toBeCloseTo(5 + 1 + 0.1, 12); // context 10 < 100: the 100 column
  });

  test("past the last point: refused naming the axis and value, or extrapolated with one warning per axis", () => {
    expect(() => timer().decodeMs(32, 32 * 100)).toThrow(ProfileRangeError);
    expect(() => timer().prefillMs(100, 5000)).toThrow("prefill.context 5000 is past the profile's last point 4000");
    const warnings: string[] = [];
    const t = timer(true, (m) => warnings.push(m));
    expect(t.decodeMs(32, 32 * 100)).toBeCloseTo(5 + 32 + 0.1, 9);
    expect(t.decodeMs(64, 64 * 100)).toBeCloseTo(5 + 64 + 0.1, 9);
    expect(t.prefillMs(2000, 0)).toBeCloseTo(10 + 20, 9);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain("decode.batch 32");
    expect(warnings[1]).toContain("prefill.tokens 2000");
  });

  test("Dynamo's decode axis: summed context tokens × mean context", () => {
    const p = sampleProfile();
    p.decode = { x: "activeKvTokens", activeKvTokens: [0, 10_000], context: [1, 1001], ms: [[5, 6], [15, 16]] };
    const t = new ProfileTimer(p, { extrapolate: false });
    expect(t.decodeMs(10, 5000)).toBeCloseTo(5 + 5 + (500 - 1) / 1000, 9); // kv halfway, mean context 500
  });

  test("a step: prefill at the mean context of its tokens plus decode (at least 1 ms), speedups divide", () => {
    const cfg: TimingConfig = { timingModel: "profile", prefillMs: 0, decodeMs: 0, speedupRatio: 1, decodeSpeedupRatio: 1, timingProfile: sampleProfile() };
    const t = timer();
    const shape = { prefillTokens: 200, prefillContextTokenProduct: 100 * 0 + 100 * 2000, prefillSelfPairs: 0, decodeRequests: 4, decodeContextTokens: 4000 };
    expect(profileStepMs(cfg, t, shape)).toBeCloseTo(10 + 2 + 1 + (5 + 4 + 1), 9);
    expect(profileStepMs({ ...cfg, speedupRatio: 2, decodeSpeedupRatio: 5 }, t, shape)).toBeCloseTo((13 + 10 / 5) / 2, 9);
    expect(profileStepMs({ ...cfg, speedupRatio: 0 }, t, shape)).toBe(0);
  });
});
