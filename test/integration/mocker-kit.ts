// Shared set-up for the mocker integration tests: resolved configs from flags and a silent logger.
import { commonOptions } from "../../src/config/common.ts";
import { loadConfig } from "../../src/config/load.ts";
import { mockerOptions, mockerProblems, type MockerConfig } from "../../src/config/mocker.ts";
import { createLogger } from "../../src/lib/logger.ts";

export const logger = createLogger({ level: "silent" });

/** The config `kvcr-mock mocker ARGV` would run with (validated the same way). */
export function mockerConfig(argv: string[]): MockerConfig {
  return loadConfig({ ...mockerOptions, ...commonOptions }, { argv }, (c) => mockerProblems(c as MockerConfig)).config as MockerConfig;
}
