import { describe, expect, test } from "bun:test";
import { thrownBy } from "../../test/harness.ts";
import { ConfigError } from "../lib/errors.ts";
import { upConfigFrom } from "./up.ts";

describe("up's restart options", () => {
  test("defaults: on-failure, 5 restarts, 1 s backoff", () => {
    const c = upConfigFrom([]);
    expect([c.restart, c.maxRestarts, c.restartBackoff]).toEqual(["on-failure", 5, 1]);
  });

  test("bad values are refused, each naming its flag", () => {
    for (const [argv, flag] of [
      [["--restart", "always"], "--restart"],
      [["--max-restarts", "-1"], "--max-restarts"],
      [["--max-restarts", "1.5"], "--max-restarts"],
      [["--restart-backoff", "-0.1"], "--restart-backoff"],
      [["--restart-backoff", "3601"], "--restart-backoff"],
    ] as const) {
      expect(thrownBy(ConfigError, () => upConfigFrom(argv)).problems.join("\n")).toContain(flag);
    }
  });
});

describe("up --router-mode", () => {
  test("oracle is refused with the reason (it exists only in replay)", () => {
    expect(thrownBy(ConfigError, () => upConfigFrom(["--router-mode", "oracle"])).problems.join("\n")).toContain("oracle is replay-only");
  });
});
