// `kvcr-mock replay`: simulate a workload offline on a virtual clock and print the report.
import { replayOptions, replayProblems } from "../config/replay.ts";
import { timingProfileOverlay } from "../config/timing-profile.ts";
import { replayOptionsFrom } from "../roles/replay/options-from-config.ts";
import { replayExitCode, runReplay } from "../roles/replay/run-replay.ts";
import { defineRoleCommand } from "./define-command.ts";
import { reportIo } from "./report-io.ts";

export const replayCommand = defineRoleCommand({
  name: "replay",
  description: "Simulate a trace or synthetic workload offline on a virtual clock (no sockets) and report metrics",
  options: replayOptions,
  refine: replayProblems,
  overlay: timingProfileOverlay,
  async run(config, { logger }) {
    const opts = replayOptionsFrom(config);
    if (config.speedupRatio !== 1) logger.info("--speedup-ratio has no effect offline: the virtual clock runs at model time");
    const report = await runReplay(opts, { ...reportIo(logger), progress: process.stderr });
    return replayExitCode(report);
  },
});
