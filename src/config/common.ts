// Options every command takes: where config comes from and how logs look.
import { defineOptions } from "./options.ts";

export const commonOptions = defineOptions({
  config: {
    kind: "string",
    nonEmpty: true,
    flagOnly: true,
    env: "KVCR_CONFIG",
    description: "Config file (JSON or YAML) of option names to values; flags and environment override it",
  },
  logLevel: {
    kind: "enum",
    choices: ["silent", "error", "warn", "info", "debug", "trace"],
    default: "info",
    env: "KVCR_LOG_LEVEL",
    description: "Log verbosity",
  },
  logFormat: {
    kind: "enum",
    choices: ["pretty", "json"],
    default: "pretty",
    env: "KVCR_LOG_FORMAT",
    description: "Log line format: pretty for people, json for machines",
  },
});
