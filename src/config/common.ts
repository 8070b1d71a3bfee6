// Options every command takes: where config comes from and how logs look.
import { group } from "./options.ts";

export const commonOptions = group("Logging/config", {
  config: {
    kind: "string",
    nonEmpty: true,
    flagOnly: true,
    description: "Config file (JSON or YAML) of option names to values; flags and environment override it",
  },
  logLevel: {
    kind: "enum",
    choices: ["silent", "error", "warn", "info", "debug", "trace"],
    default: "info",
    description: "Log verbosity",
  },
  logFormat: {
    kind: "enum",
    choices: ["pretty", "json"],
    default: "pretty",
    description: "Log line format: pretty for people, json for machines",
  },
});
