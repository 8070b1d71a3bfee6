// Process edge for every command: the root's own --help/--version, -v refused, then citty resolves
// the command word and runs it; exit codes (0 ok, 1 runtime failure, 2 usage or config error) and
// error printing, an unknown command with a suggestion when one is close.
import { runCommand } from "citty";
import { closestName } from "../lib/closest-name.ts";
import { ConfigError, KvcrError } from "../lib/errors.ts";
import { VERSION } from "../lib/version.ts";
import { ExitStatus } from "./define-command.ts";
import { helpStyleFor, renderHelp } from "./help.ts";
import { COMMANDS, ROOT_HELP, rootCommand } from "./root.ts";

export async function main(argv: readonly string[]): Promise<number> {
  const dashDash = argv.indexOf("--");
  const own = dashDash === -1 ? argv : argv.slice(0, dashDash);
  const name = own[0];
  try {
    // -v means --verbose to many tools: refuse it rather than print the version in its place.
    if (own.includes("-v")) {
      process.stderr.write("kvcr-mock: -v is not an option: --version prints the version, --log-level debug logs more\n");
      return 2;
    }
    // The command word comes first; before one, only the root's --help and --version.
    if (name === undefined || name.startsWith("-")) {
      if (own.includes("--help") || own.includes("-h")) {
        process.stdout.write((await renderHelp(ROOT_HELP, undefined, helpStyleFor(process.stdout, process.env))) + "\n");
        return 0;
      }
      if (own.includes("--version")) {
        process.stdout.write(`${VERSION}\n`);
        return 0;
      }
      process.stderr.write((await renderHelp(ROOT_HELP, undefined, helpStyleFor(process.stderr, process.env))) + "\n\nkvcr-mock: no command given.\n");
      return 2;
    }
    await runCommand(rootCommand, { rawArgs: [...argv] });
    return 0;
  } catch (err) {
    if (err instanceof ExitStatus) return err.code;
    if (isUnknownCommand(err)) {
      const commands = Object.keys(COMMANDS);
      const near = closestName(name!, commands);
      process.stderr.write(`kvcr-mock: unknown command "${name}"${near ? `; did you mean "${near}"?` : "."} Commands: ${commands.join(", ")}.\n`);
      return 2;
    }
    return report(err);
  }
}

/** citty's CLIError for a word that names no command (the class is not exported; its code is). */
function isUnknownCommand(err: unknown): boolean {
  return err instanceof Error && err.name === "CLIError" && (err as Error & { code?: unknown }).code === "E_UNKNOWN_COMMAND";
}

function report(err: unknown): number {
  if (err instanceof ConfigError) {
    process.stderr.write(`kvcr-mock: invalid configuration:\n${err.problems.map((p) => `  ${p}`).join("\n")}\n`);
    return 2;
  }
  // A step that asks a timing profile past its tables (the engine's ProfileRangeError) is the user's input too.
  if (err instanceof KvcrError || (err instanceof RangeError && err.name === "ProfileRangeError")) {
    process.stderr.write(`kvcr-mock: ${err.message}\n`);
    return 1;
  }
  process.stderr.write(`kvcr-mock: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
}
