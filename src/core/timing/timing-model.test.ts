import { describe, expect, test } from "bun:test";
import { polynomialDecodeMs, polynomialPrefillMs, stepDurationMs, type TimingConfig } from "./timing-model.ts";

const poly: TimingConfig = { timingModel: "polynomial", prefillMs: 20, decodeMs: 10, speedupRatio: 1, decodeSpeedupRatio: 1 };

describe("timing models", () => {
  test("polynomial prefill: exact formula, 0 for no tokens", () => {
    expect(polynomialPrefillMs(0)).toBe(0);
    expect(polynomialPrefillMs(1000)).toBeCloseTo(4.209989e-7 * 1e6 + 15.18344 + 16.50142, 9);
    expect(polynomialPrefillMs(8192)).toBeCloseTo(4.209989e-7 * 8192 ** 2 + 0.01518344 * 8192 + 16.50142, 9);
  });

  test("polynomial decode: exact formula with a 1 ms floor", () => {
    expect(polynomialDecodeMs(0)).toBeCloseTo(5.74, 12);
    expect(polynomialDecodeMs(0.5)).toBeCloseTo(-25.74 * 0.25 + 54.01 * 0.5 + 5.74, 12);
    expect(polynomialDecodeMs(1)).toBeCloseTo(34.01, 12);
    expect(polynomialDecodeMs(-1)).toBe(1); // the fit goes negative; the floor holds
  });

  test("a step doing both prefill and decode takes the sum", () => {
    expect(stepDurationMs(poly, 100, 3, 0.25)).toBeCloseTo(polynomialPrefillMs(100) + polynomialDecodeMs(0.25), 12);
  });

  test("the speedup ratio divides the whole step", () => {
    const both = stepDurationMs(poly, 100, 3, 0.25);
    expect(stepDurationMs({ ...poly, speedupRatio: 2 }, 100, 3, 0.25)).toBeCloseTo(both / 2, 12);
  });

  test("the decode speedup ratio divides the decode part only", () => {
    expect(stepDurationMs({ ...poly, decodeSpeedupRatio: 4 }, 100, 3, 0.25)).toBeCloseTo(polynomialPrefillMs(100) + polynomialDecodeMs(0.25) / 4, 12);
  });

  test("a step with nothing to do takes no time", () => {
    expect(stepDurationMs(poly, 0, 0, 0.5)).toBe(0);
  });

  test("a decode-only step takes the decode time", () => {
    expect(stepDurationMs(poly, 0, 1, 0)).toBeCloseTo(5.74, 12);
  });

  test("speedup 0 means as fast as possible", () => {
    expect(stepDurationMs({ ...poly, speedupRatio: 0 }, 5000, 10, 0.9)).toBe(0);
  });

  test("fixed model: constant per part", () => {
    const fixed: TimingConfig = { ...poly, timingModel: "fixed" };
    expect(stepDurationMs(fixed, 1, 0, 0)).toBe(20);
    expect(stepDurationMs(fixed, 0, 7, 0.9)).toBe(10);
    expect(stepDurationMs(fixed, 4096, 7, 0.1)).toBe(30);
    expect(stepDurationMs({ ...fixed, decodeSpeedupRatio: 2, speedupRatio: 10 }, 4096, 7, 0.1)).toBe(2.5);
  });
});
