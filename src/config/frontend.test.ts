import { describe, expect, test } from "bun:test";
import { commonOptions } from "./common.ts";
import { frontendOptions, frontendProblems, type FrontendConfig } from "./frontend.ts";
import { loadConfig } from "./load.ts";

const load = (argv: string[]) => loadConfig({ ...frontendOptions, ...commonOptions }, { argv }, (c) => frontendProblems(c as FrontendConfig)).config as FrontendConfig;

describe("frontend options", () => {
  test("defaults: 1 MiB prompts, 30 s bodies, and a worker stall caught before the discovery lease lapses", () => {
    const c = load([]);
    expect(c.maxPromptBytes).toBe(1 << 20);
    expect(c.bodyTimeoutMs).toBe(30_000);
    expect(c.workerStallTimeout).toBe(5);
    expect(c.workerStallTimeout).toBeLessThan(c.discoveryLeaseTtl);
    expect(frontendOptions.workerStallTimeout.description).toContain("--discovery-lease-ttl");
  });

  test("--max-prompt-bytes and --body-timeout-ms are flags", () => {
    const c = load(["--max-prompt-bytes", "2048", "--body-timeout-ms", "250"]);
    expect([c.maxPromptBytes, c.bodyTimeoutMs]).toEqual([2048, 250]);
  });
});
