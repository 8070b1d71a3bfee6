// A command is a citty command (`defineCommand`: meta, run) that the root command's `subCommands`
// hold and citty resolves; on top the project adds the --help rows of its option table and
// `exec(argv)` → exit code. defineRoleCommand builds one from an option table, so --help comes from
// the same descriptors the strict loader validates, and `exec` gets that table's typed config, a
// tagged logger and `serve`, the one place a serving role meets signals, crashes and its lifeline.
import { defineCommand, type CommandDef as CittyCommandDef } from "citty";
import { commonOptions } from "../config/common.ts";
import { loadConfig, type ConfigSections, type Overlay, type Refine } from "../config/load.ts";
import { envNames, flagName, type ConfigOf, type OptionTable } from "../config/options.ts";
import { ConfigError } from "../lib/errors.ts";
import { createLogger, type Logger } from "../lib/logger.ts";
import { serveRole, untilCrash, untilSignal, untilStopSignal, type RoleHandle } from "../lib/role.ts";
import { VERSION } from "../lib/version.ts";
import { helpStyleFor, renderHelp, type CommandMeta, type HelpRows } from "./help.ts";
import { PROGRAM } from "./program.ts";

/** A citty command (what `defineCommand` returns, run by citty) with what the project adds. */
export type Command = CittyCommandDef & {
  meta: CommandMeta;
  /** Not citty's `args`: citty's own (lenient) parser is never given our flags; loadConfig reads them. */
  flags: HelpRows;
  /** Runs with the arguments after the command's name; resolves to the exit code. */
  exec(argv: readonly string[]): Promise<number>;
};

/**
 * A command's exit status on its way out of citty, which drops what a subcommand's `run` returns:
 * `run` throws it for a non-zero code, and cli/main.ts returns its `code`.
 */
export class ExitStatus extends Error {
  constructor(readonly code: number) {
    super(`exit status ${code}`);
    this.name = "ExitStatus";
  }
}

/**
 * The citty command for `exec`: --help and --version (before any `--`) answer here, so they reach
 * the command citty resolved; a non-zero exit code leaves as an ExitStatus.
 */
export function defineCliCommand(meta: CommandMeta, flags: HelpRows, exec: (argv: readonly string[]) => Promise<number>): Command {
  const command: Command = Object.assign(
    defineCommand({
      meta,
      async run({ rawArgs }) {
        const dashDash = rawArgs.indexOf("--");
        const own = dashDash === -1 ? rawArgs : rawArgs.slice(0, dashDash);
        if (own.includes("--help") || own.includes("-h")) {
          process.stdout.write((await renderHelp(command, { meta: PROGRAM }, helpStyleFor(process.stdout, process.env))) + "\n");
          return;
        }
        if (own.includes("--version")) {
          process.stdout.write(`${VERSION}\n`);
          return;
        }
        const code = await exec(rawArgs);
        if (code !== 0) throw new ExitStatus(code);
      },
    }),
    { meta, flags, exec },
  );
  return command;
}

export interface ServeOptions {
  /** More ways to stop, each resolving with the exit code to use. */
  stops?: readonly Promise<number>[];
  /** Appended to the "SIG… again: already shutting down" warning. */
  repeatNote?: string;
  /** Stop on a signal without logging it (a tap whose output is the point). */
  quiet?: boolean;
}

export interface CommandContext {
  logger: Logger;
  /** Arguments after `--`. */
  rest: string[];
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Starts a serving role and serves it (lib/role.ts serveRole) until SIGINT/SIGTERM (exit 0; the
   * handlers are in place before start, and a repeat only warns), a crash (1), a failed `ready`
   * (1), a cut lifeline to `up` (1) or one of `stops`; the role is closed on every path.
   */
  serve(start: () => Promise<RoleHandle>, opts?: ServeOptions): Promise<number>;
}

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
  /** Rewrites the command line before it is read (another tool's flags); its warnings are logged, its problems refuse the start. */
  translate?: (argv: readonly string[]) => { argv: string[]; warnings: string[]; problems: string[] };
  /** Returns the exit code (default 0); a ConfigError exits 2, any other error 1 (cli/main.ts). */
  run(config: ConfigOf<T & typeof commonOptions>, ctx: CommandContext): Promise<number | void>;
}

export function defineRoleCommand<T extends OptionTable>(spec: RoleCommandSpec<T>): Command {
  const options = { ...spec.options, ...commonOptions };
  return defineCliCommand({ name: spec.name, description: spec.description }, helpRows(options), async (given) => {
    const translated = spec.translate?.(given);
    if (translated && translated.problems.length > 0) throw new ConfigError(translated.problems);
    const argv = translated?.argv ?? given;
    const { config, rest } = loadConfig(options, { argv, env: process.env }, spec.refine, { overlay: spec.overlay, sections: spec.sections });
    if (rest.length > 0 && !spec.takesRest) throw new ConfigError([`unexpected arguments after --: ${rest.join(" ")}`]);
    const logger = createLogger({ level: config.logLevel, format: config.logFormat, tag: spec.name });
    for (const w of translated?.warnings ?? []) logger.warn(w);
    const serve: CommandContext["serve"] = async (start, opts = {}) => {
      const signal = opts.quiet ? untilSignal().then(() => 0) : untilStopSignal(logger, opts.repeatNote);
      const role = await start();
      return serveRole(role, { name: spec.name, logger, stops: [signal, ...(opts.stops ?? []), untilCrash(logger)] });
    };
    return (await spec.run(config, { logger, rest, env: process.env, serve })) ?? 0;
  });
}

/** The --help rows of an option table (cli/help.ts renders them; parsing is strict, in loadConfig). */
function helpRows(table: OptionTable): HelpRows {
  const args: HelpRows = {};
  for (const [key, spec] of Object.entries(table)) {
    const notes = [
      spec.default !== undefined && !(spec.kind === "bool" && spec.default === false) ? `default ${JSON.stringify(spec.default)}` : "",
      spec.kind === "enum" ? spec.choices.join("|") : "",
      spec.aliases?.length ? `also ${spec.aliases.map((a) => `--${a}`).join(", ")}` : "",
      `env ${envNames(key, spec).join(" or ")}`,
    ].filter(Boolean);
    args[flagName(key, spec)] = {
      description: notes.length ? `${spec.description} (${notes.join("; ")})` : spec.description,
      valueHint: spec.kind === "bool" ? undefined : spec.kind === "enum" ? "value" : spec.kind,
      negativeDescription: spec.kind === "bool" && spec.default === true ? `Turn off: ${spec.description}` : undefined,
      group: spec.group,
    };
  }
  return args;
}
