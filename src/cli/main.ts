// Process edge for every command: --help/--version on any command, exit codes
// (0 ok, 1 runtime failure, 2 usage or config error) and error printing.
import { runCommand, type CommandDef } from "citty";
import { ConfigError, KvcrError } from "../lib/errors.ts";
import { helpStyleFor, renderHelp } from "./help.ts";
import { rootCommand } from "./root.ts";
import { VERSION } from "./version.ts";

export async function main(argv: readonly string[]): Promise<number> {
  const dashDash = argv.indexOf("--");
  const own = dashDash === -1 ? argv : argv.slice(0, dashDash);
  try {
    if (own.includes("--help") || own.includes("-h")) {
      const [cmd, parent] = await resolveCommand(rootCommand, own);
      process.stdout.write((await renderHelp(cmd, parent, helpStyleFor(process.stdout, process.env))) + "\n");
      return 0;
    }
    // -v means --verbose to many tools: refuse it rather than print the version in its place.
    if (own.includes("-v")) {
      process.stderr.write("kvcr-mock: -v is not an option: --version prints the version, --log-level debug logs more\n");
      return 2;
    }
    if (own.includes("--version")) {
      process.stdout.write(`${VERSION}\n`);
      return 0;
    }
    const subs = (await rootCommand.subCommands) as Record<string, unknown>;
    const name = own[0];
    if (name === undefined || name.startsWith("-")) {
      process.stderr.write((await renderHelp(rootCommand, undefined, helpStyleFor(process.stderr, process.env))) + "\n\nkvcr-mock: no command given.\n");
      return 2;
    }
    if (!(name in subs)) {
      process.stderr.write(`kvcr-mock: unknown command "${name}". Commands: ${Object.keys(subs).join(", ") || "(none yet)"}.\n`);
      return 2;
    }
    await runCommand(rootCommand, { rawArgs: [...argv] });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (err) {
    return report(err);
  }
}

function report(err: unknown): number {
  if (err instanceof ConfigError) {
    process.stderr.write(`kvcr-mock: invalid configuration:\n${err.problems.map((p) => `  ${p}`).join("\n")}\n`);
    return 2;
  }
  if (err instanceof KvcrError) {
    process.stderr.write(`kvcr-mock: ${err.message}\n`);
    return 1;
  }
  process.stderr.write(`kvcr-mock: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
}

async function resolveCommand(cmd: CommandDef, argv: readonly string[], parent?: CommandDef): Promise<[CommandDef, CommandDef | undefined]> {
  const subs = typeof cmd.subCommands === "function" ? await cmd.subCommands() : await cmd.subCommands;
  const name = argv.find((a) => !a.startsWith("-"));
  const sub = name && subs ? subs[name] : undefined;
  if (!sub) return [cmd, parent];
  const resolved = (typeof sub === "function" ? await sub() : await sub) as CommandDef;
  return resolveCommand(resolved, argv.slice(argv.indexOf(name!) + 1), cmd);
}
