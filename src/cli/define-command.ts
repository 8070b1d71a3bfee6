// Builds a citty command from an option table: --help text comes from the same descriptors the
// loader validates, and `run` receives the resolved, validated config and a tagged logger.
import { defineCommand, type ArgsDef, type CommandDef } from "citty";
import { commonOptions } from "../config/common.ts";
import { loadConfig, type ConfigSections, type Overlay, type Refine } from "../config/load.ts";
import { envNames, flagName, type ConfigOf, type OptionTable } from "../config/options.ts";
import { ConfigError } from "../lib/errors.ts";
import { createLogger, type Logger } from "../lib/logger.ts";

export interface CommandContext {
  logger: Logger;
  /** Arguments after `--`. */
  rest: string[];
  env: Readonly<Record<string, string | undefined>>;
}

/** A command's run returns its exit code (default 0). */
export type CommandRun<T extends OptionTable> = (
  config: ConfigOf<T & typeof commonOptions>,
  ctx: CommandContext,
) => Promise<number | void>;

export interface RoleCommandSpec<T extends OptionTable> {
  name: string;
  description: string;
  options: T;
  refine?: Refine<T & typeof commonOptions>;
  overlay?: Overlay<T & typeof commonOptions>;
  /** The config file is sectioned (`up`'s stack file): section name → the keys it may hold. */
  sections?: ConfigSections<T & typeof commonOptions>;
  /** Accept `-- CMD…` after the flags. */
  takesRest?: boolean;
  run: CommandRun<T>;
}

export function defineRoleCommand<T extends OptionTable>(spec: RoleCommandSpec<T>): CommandDef {
  const table = { ...spec.options, ...commonOptions } as T & typeof commonOptions;
  return defineCommand({
    meta: { name: spec.name, description: spec.description },
    args: helpArgs(table),
    async run({ rawArgs }) {
      const { config, rest } = loadConfig(table, { argv: rawArgs, env: process.env }, spec.refine, { overlay: spec.overlay, sections: spec.sections });
      if (rest.length > 0 && !spec.takesRest) throw new ConfigError([`unexpected arguments after --: ${rest.join(" ")}`]);
      const logger = createLogger({ level: config.logLevel, format: config.logFormat, tag: spec.name });
      const code = await spec.run(config, { logger, rest, env: process.env });
      process.exitCode = code ?? 0;
    },
  });
}

/** citty argument definitions, used only to render --help (cli/help.ts; parsing is strict, in loadConfig). */
function helpArgs(table: OptionTable): ArgsDef {
  const args: ArgsDef = {};
  for (const [key, spec] of Object.entries(table)) {
    const notes = [
      spec.default !== undefined && !(spec.kind === "bool" && spec.default === false) ? `default ${JSON.stringify(spec.default)}` : "",
      spec.kind === "enum" ? spec.choices.join("|") : "",
      `env ${envNames(key, spec).join(" or ")}`,
    ].filter(Boolean);
    const description = notes.length ? `${spec.description} (${notes.join("; ")})` : spec.description;
    args[flagName(key, spec)] =
      spec.kind === "bool"
        ? { type: "boolean", description, default: spec.default, negativeDescription: spec.default === true ? `Turn off: ${spec.description}` : undefined }
        : { type: "string", description, valueHint: spec.kind === "enum" ? undefined : spec.kind };
  }
  return args;
}
