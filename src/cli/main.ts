// Process edge for every command: finds the command, --help/--version on any command, exit codes
// (0 ok, 1 runtime failure, 2 usage or config error) and error printing.
import { ConfigError, KvcrError } from "../lib/errors.ts";
import type { Command } from "./define-command.ts";
import { helpStyleFor, renderHelp } from "./help.ts";
import { rootCommand } from "./root.ts";
import { VERSION } from "../lib/version.ts";

export async function main(argv: readonly string[]): Promise<number> {
  const dashDash = argv.indexOf("--");
  const own = dashDash === -1 ? argv : argv.slice(0, dashDash);
  const commands: Record<string, () => Promise<Command>> = rootCommand.subCommands;
  const find = (name: string | undefined) => (name !== undefined && Object.hasOwn(commands, name) ? commands[name] : undefined);
  try {
    if (own.includes("--help") || own.includes("-h")) {
      // The command is the first word that is not a flag; any other word (a flag's value) means the root.
      const cmd = await find(own.find((a) => !a.startsWith("-")))?.();
      process.stdout.write((await renderHelp(cmd ?? rootCommand, cmd && rootCommand, helpStyleFor(process.stdout, process.env))) + "\n");
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
    const name = own[0];
    if (name === undefined || name.startsWith("-")) {
      process.stderr.write((await renderHelp(rootCommand, undefined, helpStyleFor(process.stderr, process.env))) + "\n\nkvcr-mock: no command given.\n");
      return 2;
    }
    const load = find(name);
    if (!load) {
      process.stderr.write(`kvcr-mock: unknown command "${name}". Commands: ${Object.keys(commands).join(", ")}.\n`);
      return 2;
    }
    return await (await load()).run(argv.slice(1));
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
