// `kvcr-mock calibrate`: fit a parametric timing profile to one measured run of a real server,
// print its error on held-out requests, and write the profile.
import { calibrateOptions, calibrateProblems } from "../config/calibrate.ts";
import { VERSION } from "../lib/version.ts";
import { runCalibrate } from "../roles/calibrate/run-calibrate.ts";
import { engineConfigFrom } from "../roles/shared/measure/engine-config-from-options.ts";
import { routerOptionsFrom } from "../roles/shared/routing/router-settings.ts";
import { defineRoleCommand } from "./define-command.ts";
import { reportIo } from "./report-io.ts";

export const calibrateCommand = defineRoleCommand({
  name: "calibrate",
  description: "Fit a timing profile to one measured run of a real server (vllm bench serve, aiperf or bench --save-detailed) and report its error on held-out requests",
  options: calibrateOptions,
  refine: calibrateProblems,
  run(c, { logger }) {
    // Block size and G1 blocks may come from the run (run-calibrate.ts): placeholders until then.
    const engine = engineConfigFrom({ ...c, blockSize: c.blockSize ?? 64, numGpuBlocksOverride: c.numGpuBlocksOverride ?? 1, speedupRatio: 1, decodeSpeedupRatio: 1, timingModel: "polynomial", prefillMs: 0, decodeMs: 0 });
    runCalibrate(
      {
        from: c.from!,
        out: c.out!,
        holdout: c.holdout,
        seed: c.seed,
        ...(c.name !== undefined ? { name: c.name } : {}),
        ...(c.outputJson !== undefined ? { outputJson: c.outputJson } : {}),
        ...(c.concurrency !== undefined ? { concurrency: c.concurrency } : {}),
        ...(c.requestRate !== undefined ? { requestRate: c.requestRate } : {}),
        ...(c.blockSize !== undefined ? { blockSize: c.blockSize } : {}),
        ...(c.numGpuBlocksOverride !== undefined ? { numGpuBlocks: c.numGpuBlocksOverride } : {}),
        stack: { ...(c.numWorkers !== undefined ? { numWorkers: c.numWorkers } : {}), dataParallelSize: c.dataParallelSize, routerMode: c.routerMode, router: routerOptionsFrom(c), engine },
      },
      { ...reportIo(logger), version: VERSION },
    );
    return Promise.resolve(0);
  },
});
