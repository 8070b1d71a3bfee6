// `kvcr-mock mocker`: N mock workers × D ranks in one process. Runs until SIGINT/SIGTERM
// (exit 0), a failed start-up (exit 1) or a crash (exit 1); every path withdraws the process's
// intents and records first.
import { asksForDynamo, translateDynamoMockerFlags } from "../config/dynamo-mocker-flags.ts";
import { dynamoOverlay } from "../config/dynamo-runtime.ts";
import { mockerOptions, extraEngineArgsOverlay, mockerProblems } from "../config/mocker.ts";
import { timingProfileOverlay } from "../config/timing-profile.ts";
import { startDynamoMocker } from "../roles/mocker/dynamo/start.ts";
import { startMocker } from "../roles/mocker/index.ts";
import { defineRoleCommand } from "./define-command.ts";

export const mockerCommand = defineRoleCommand({
  name: "mocker",
  description: "Run N mock vLLM-like workers (each with D data-parallel ranks) in one process",
  options: mockerOptions,
  refine: mockerProblems,
  // Under --runtime dynamo, Dynamo's own mocker flags too (a launch script runs unchanged).
  translate: (argv) => (asksForDynamo(argv) ? translateDynamoMockerFlags(argv) : { argv: [...argv], warnings: [], problems: [] }),
  overlay: (config, problems, given) => new Map([...extraEngineArgsOverlay(config, problems), ...dynamoOverlay(config, given, process.env), ...timingProfileOverlay(config, problems, given)]),
  run: (config, { logger, env, serve }) =>
    serve(() => (config.runtime === "dynamo" ? startDynamoMocker(config, { logger, env }) : startMocker(config, { logger, env })), { repeatNote: " (withdrawing records first)" }),
});
