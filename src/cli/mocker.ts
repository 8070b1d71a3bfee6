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
    const stop = untilSignal();
    const mocker = await startMocker(config, { logger, env });
    try {
      await Promise.race([mocker.ready, stop]);
      const signal = await Promise.race([stop, new Promise<undefined>(() => {})]);
      logger.info(`${signal}: shutting down`);
    } finally {
      await mocker.close();
    }
  },
});
