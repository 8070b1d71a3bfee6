// `kvcr-mock mocker`: N mock workers × D ranks in one process (SPEC §3).
import { mockerOptions, extraEngineArgsOverlay, mockerProblems } from "../config/mocker.ts";
import { untilSignal } from "../lib/role.ts";
import { startMocker } from "../roles/mocker/index.ts";
import { defineRoleCommand } from "./define-command.ts";

export const mockerCommand = defineRoleCommand({
  name: "mocker",
  description: "Run N mock vLLM-like workers (each with D data-parallel ranks) in one process",
  options: mockerOptions,
  refine: mockerProblems,
  overlay: (config, problems) => extraEngineArgsOverlay(config, problems),
  async run(config, { logger, env }) {
    const stop = untilSignal((sig) => logger.warn(`${sig} again: already shutting down (withdrawing records first)`));
    const mocker = await startMocker(config, { logger, env });
    // A crash anywhere still withdraws intents and records before the process exits.
    const crash = (err: unknown) => {
      logger.error(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      void mocker.close().finally(() => process.exit(1));
    };
    process.on("uncaughtException", crash);
    process.on("unhandledRejection", crash);
    try {
      const signal = await Promise.race([mocker.ready.then(() => stop), stop]);
      logger.info(`${signal}: shutting down`);
    } finally {
      await mocker.close();
    }
  },
});
