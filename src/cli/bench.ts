// `kvcr-mock bench`: drive an OpenAI-compatible server and report vLLM `bench serve` metrics.
import { mkdirSync } from "node:fs";
import { benchOptions, benchProblems } from "../config/bench.ts";
import { timingProfileOverlay } from "../config/timing-profile.ts";
import { benchOptionsFrom } from "../roles/bench/options-from-config.ts";
import { progressBar } from "../roles/bench/progress-bar.ts";
import { benchExitCode, runBench } from "../roles/bench/run-bench.ts";
import { freshStackStarter } from "./bench-stack.ts";
import { defineRoleCommand } from "./define-command.ts";
import { reportIo } from "./report-io.ts";

export const benchCommand = defineRoleCommand({
  name: "bench",
  description: "Drive load at any OpenAI-compatible endpoint (shared-prefix, vLLM's random dataset or Mooncake trace workloads) and report vLLM bench serve metrics; takes vllm bench serve's flags",
  options: benchOptions,
  refine: benchProblems,
  overlay: timingProfileOverlay,
  async run(config, { logger, env }) {
    const stop = new AbortController();
    // A run cut short exits as a shell reports the signal: 130 for SIGINT, 143 for SIGTERM.
    let signalExit = 130;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stop.signal.aborted) return;
      signalExit = signal === "SIGTERM" ? 143 : 130;
      logger.warn(`stopping: no more requests are sent, in-flight ones are aborted (counted as aborted, not failed); the partial result is written, exit status ${signalExit}`);
      stop.abort();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      const io = reportIo(logger);
      // vLLM creates the result directory too.
      if (config.resultDir !== undefined && (config.saveResult || config.appendResult)) mkdirSync(config.resultDir, { recursive: true });
      const outcome = await runBench(benchOptionsFrom(config, io.readFile), {
        ...io,
        sleep: (ms) => Bun.sleep(ms),
        progress: config.disableTqdm ? undefined : progressBar(process.stderr),
        stop: stop.signal,
        startStack: freshStackStarter(config.stackConfig, logger, env, config.logLevel),
      });
      const code = benchExitCode(outcome);
      return code === 130 ? signalExit : code;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  },
});
