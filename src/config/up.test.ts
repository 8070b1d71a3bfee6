import { describe, expect, test } from "bun:test";
import { thrownBy } from "../../test/harness.ts";
import { ConfigError } from "../lib/errors.ts";
import { upConfigFrom } from "./up.ts";

describe("up's restart options", () => {
  test("defaults: on-failure, 5 restarts, 1 s backoff, a child silent for 5 s is hung", () => {
    const c = upConfigFrom([]);
    expect([c.restart, c.maxRestarts, c.restartBackoff, c.livenessTimeout]).toEqual(["on-failure", 5, 1, 5]);
  });

  test("--liveness-timeout: 0 turns it off; from a flag or KVCR_LIVENESS_TIMEOUT", () => {
    expect(upConfigFrom(["--liveness-timeout", "0"]).livenessTimeout).toBe(0);
    expect(upConfigFrom([], { KVCR_LIVENESS_TIMEOUT: "2.5" }).livenessTimeout).toBe(2.5);
  });

  test("bad values are refused, each naming its flag", () => {
    for (const [argv, flag] of [
      [["--restart", "always"], "--restart"],
      [["--max-restarts", "-1"], "--max-restarts"],
      [["--max-restarts", "1.5"], "--max-restarts"],
      [["--restart-backoff", "-0.1"], "--restart-backoff"],
      [["--restart-backoff", "3601"], "--restart-backoff"],
      [["--liveness-timeout", "-1"], "--liveness-timeout"],
      [["--liveness-timeout", "soon"], "--liveness-timeout"],
    ] as const) {
      expect(thrownBy(ConfigError, () => upConfigFrom(argv)).problems.join("\n")).toContain(flag);
    }
  });
});

describe("up --liveness-timeout", () => {
  test("below 1 s (but not 0) is refused: a probe's own deadline is up to 1 s", () => {
    expect(thrownBy(ConfigError, () => upConfigFrom(["--liveness-timeout", "0.5"])).problems).toEqual(["--liveness-timeout: got 0.5, expected 0 (off) or at least 1 second (a probe's own deadline is up to 1 s)"]);
  });
});

describe("up --router-mode", () => {
  test("oracle is refused with the reason (it exists only in replay)", () => {
    expect(thrownBy(ConfigError, () => upConfigFrom(["--router-mode", "oracle"])).problems.join("\n")).toContain("oracle is replay-only");
  });
});
