// `kvcr-mock bench`: drive an OpenAI-compatible server and report vLLM `bench serve` metrics.
import { benchOptions, benchProblems } from "../config/bench.ts";
import { benchOptionsFrom } from "../roles/bench/options-from-config.ts";
import { progressBar } from "../roles/bench/progress-bar.ts";
import { benchExitCode, runBench } from "../roles/bench/run-bench.ts";
import { freshStackStarter } from "./bench-stack.ts";
import { defineRoleCommand } from "./define-command.ts";
import { reportIo } from "./report-io.ts";

export const benchCommand = defineRoleCommand({
  name: "bench",
  description: "Drive load at any OpenAI-compatible endpoint (shared-prefix or Mooncake trace workloads) and report vLLM bench serve metrics",
  options: benchOptions,
  refine: benchProblems,
  async run(config, { logger, env }) {
    const stop = new AbortController();
    const onSignal = () => {
      if (stop.signal.aborted) return;
      logger.warn("stopping: in-flight requests are aborted and counted as failed; the report covers what was measured");
      stop.abort();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      const io = reportIo(logger);
      const outcome = await runBench(benchOptionsFrom(config, io.readFile), {
        ...io,
        sleep: (ms) => Bun.sleep(ms),
        progress: progressBar(process.stderr),
        stop: stop.signal,
        startStack: freshStackStarter(config.stackConfig, logger, env, config.logLevel),
      });
      return benchExitCode(outcome);
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  },
});
