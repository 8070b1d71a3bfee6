// The root command: subcommands load lazily so `kvcr-mock events` does not load the engine.
import type { Command } from "./define-command.ts";
import { VERSION } from "../lib/version.ts";

export const rootCommand = {
  meta: {
    name: "kvcr-mock",
    version: VERSION,
    description: "GPU-free KV-cache-aware LLM serving stack: mock vLLM workers with real ZeroMQ KV events, offline trace replay",
  },
  subCommands: {
    agent: () => import("./agent.ts").then((m) => m.agentCommand),
    bench: () => import("./bench.ts").then((m) => m.benchCommand),
    events: () => import("./events.ts").then((m) => m.eventsCommand),
    frontend: () => import("./frontend.ts").then((m) => m.frontendCommand),
    mocker: () => import("./mocker.ts").then((m) => m.mockerCommand),
    replay: () => import("./replay.ts").then((m) => m.replayCommand),
    up: () => import("./up.ts").then((m) => m.upCommand),
  } satisfies Record<string, () => Promise<Command>>,
};
