// The root command: citty resolves the command word among `subCommands`, which load lazily so
// `kvcr-mock events` does not load the engine. The table has no prototype, so a word such as
// `toString` or `__proto__` names no command (citty looks names up with `in`).
import { defineCommand } from "citty";
import type { Command } from "./define-command.ts";
import { PROGRAM } from "./program.ts";

/** Command name → its loader, in a table without a prototype. */
function commandTable(loaders: Record<string, () => Promise<Command>>): Readonly<Record<string, () => Promise<Command>>> {
  return Object.freeze(Object.assign(Object.create(null) as Record<string, () => Promise<Command>>, loaders));
}

/** The commands, each loaded when it is used. */
export const COMMANDS = commandTable({
  agent: () => import("./agent.ts").then((m) => m.agentCommand),
  bench: () => import("./bench.ts").then((m) => m.benchCommand),
  calibrate: () => import("./calibrate.ts").then((m) => m.calibrateCommand),
  events: () => import("./events.ts").then((m) => m.eventsCommand),
  frontend: () => import("./frontend.ts").then((m) => m.frontendCommand),
  mocker: () => import("./mocker.ts").then((m) => m.mockerCommand),
  "model-files": () => import("./model-files.ts").then((m) => m.modelFilesCommand),
  replay: () => import("./replay.ts").then((m) => m.replayCommand),
  up: () => import("./up.ts").then((m) => m.upCommand),
});

export const rootCommand = defineCommand({ meta: PROGRAM, subCommands: COMMANDS });

/** The root as --help renders it. */
export const ROOT_HELP = { meta: PROGRAM, commands: COMMANDS };
