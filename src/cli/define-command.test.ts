import { describe, expect, test } from "bun:test";
import { defineOptions } from "../config/options.ts";
import { ConfigError } from "../lib/errors.ts";
import { defineRoleCommand } from "./define-command.ts";
import { renderHelp } from "./help.ts";

const options = defineOptions({
  numWorkers: { kind: "int", min: 1, default: 1, description: "Workers in this process" },
  enablePrefixCaching: { kind: "bool", default: true, description: "Reuse cached prefix blocks" },
});

describe("defineRoleCommand", () => {
  test("run receives the validated config and the arguments after --", async () => {
    let seen: unknown;
    const cmd = defineRoleCommand({
      name: "demo",
      description: "demo",
      options,
      takesRest: true,
      run: async (config, ctx) => {
        // Typed from the table, no casts: these fail to compile if the type is lost.
        const workers: number = config.numWorkers;
        const caching: boolean = config.enablePrefixCaching;
        const level: "silent" | "error" | "warn" | "info" | "debug" | "trace" = config.logLevel;
        // @ts-expect-error not an option of this table
        void config.blockSize;
        seen = { workers, caching, level, rest: ctx.rest };
        return 3;
      },
    });
    const code = await cmd.exec(["--num-workers", "3", "--no-enable-prefix-caching", "--log-level", "silent", "--", "echo", "hi"]);
    expect(seen).toEqual({ workers: 3, caching: false, level: "silent", rest: ["echo", "hi"] });
    expect(code).toBe(3);
  });

  test("serve closes the role and returns the exit code of the first stop", async () => {
    let closed = 0;
    const role = { ready: Promise.resolve(), ports: {}, close: async () => void closed++, [Symbol.asyncDispose]: async () => {} };
    const cmd = defineRoleCommand({ name: "demo", description: "demo", options, run: (_, { serve }) => serve(async () => role, { quiet: true, stops: [Promise.resolve(7)] }) });
    expect(await cmd.exec(["--log-level", "silent"])).toBe(7);
    expect(closed).toBe(1);
  });

  test("bad config never reaches run", async () => {
    let ran = false;
    const cmd = defineRoleCommand({ name: "demo", description: "demo", options, run: async () => void (ran = true) });
    const err = await cmd.exec(["--num-workers", "0", "--", "x"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual(["--num-workers: got 0, expected an integer ≥ 1"]);
    expect(ran).toBe(false);
  });

  test("--help text comes from the option descriptors", async () => {
    const cmd = defineRoleCommand({ name: "demo", description: "demo", options, run: async () => {} });
    const usage = await renderHelp(cmd, undefined, { width: 200, color: false });
    expect(usage).toContain("--num-workers");
    expect(usage).toContain("Workers in this process (default 1; env KVCR_NUM_WORKERS)");
    expect(usage).toContain("--no-enable-prefix-caching");
    expect(usage).toContain("--log-level");
  });
});
