// Shared set-up for the mocker integration tests: resolved configs from flags, a silent logger,
// and a cleanup list drained after each test (also when it fails).
import { afterEach } from "bun:test";
import { commonOptions } from "../../src/config/common.ts";
import { loadConfig } from "../../src/config/load.ts";
import { mockerOptions, mockerProblems, type MockerConfig } from "../../src/config/mocker.ts";
import { createLogger } from "../../src/lib/logger.ts";

export const logger = createLogger({ level: "silent" });

/** The config `kvcr-mock mocker ARGV` would run with (validated the same way). */
export function mockerConfig(argv: string[]): MockerConfig {
  return loadConfig({ ...mockerOptions, ...commonOptions }, { argv }, (c) => mockerProblems(c as MockerConfig)).config as MockerConfig;
}

/** Registers an afterEach that runs the returned list's cleanups in reverse order. */
export function cleanupList(): (() => unknown)[] {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return cleanups;
}
