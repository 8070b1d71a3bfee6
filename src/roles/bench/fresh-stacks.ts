// Fresh stacks for `bench --compare-router-modes` / `--sweep-concurrency` without URLs: each is
// started from `up`'s stack file (--stack-config) or up's defaults through the launcher's own
// startStack, with the router mode of the run, picked ports and a private discovery directory and
// namespace, so runs never see each other's workers. The launcher is handed in (roles/bench does
// not import roles/launcher; src/cli/bench-stack.ts wires the two).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { upConfigFrom, type UpConfig } from "../../config/up.ts";
import type { Logger } from "../../lib/logger.ts";
import type { ProcessControl } from "../shared/stack/fault-runner.ts";
import type { FreshStack, StartedStack } from "./bench-types.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** The launcher's startStack, as far as bench needs it. */
export type LaunchStack = (
  config: UpConfig,
  deps: { logger: Logger; env: Env },
) => Promise<{ readonly frontendUrl: string | undefined; readonly processes: readonly { role: string; url: string }[]; readonly control: ProcessControl; close(): Promise<void> }>;

let stacks = 0;

/**
 * Children log warnings and errors only (their info lines would bury bench's table), unless bench
 * itself runs at debug or trace, which they then share.
 */
export function freshStacks(launch: LaunchStack, stackConfig: string | undefined, logger: Logger, env: Env, logLevel = "info"): (fresh: FreshStack) => Promise<StartedStack> {
  const childLevel = logLevel === "debug" || logLevel === "trace" ? logLevel : "warn";
  return async ({ routerMode, upArgs = [], stackConfig: own }) => {
    const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-stack-"));
    const file = own ?? stackConfig;
    const argv = [
      ...(file !== undefined ? ["--config", file] : []),
      ...(routerMode !== undefined ? ["--router-mode", routerMode] : []),
      "--http-port", "0", "--agent-port", "0",
      "--log-level", childLevel, "--discovery-backend", "file", "--discovery-dir", dir, "--namespace", `bench-${process.pid}-${++stacks}`,
      ...upArgs,
    ];
    try {
      const handle = await launch(upConfigFrom(argv), { logger, env });
      if (!handle.frontendUrl) {
        await handle.close();
        throw new Error("the stack config starts no frontend (--roles must include frontend)");
      }
      return {
        url: handle.frontendUrl,
        mockerUrls: handle.processes.filter((p) => p.role === "mocker").map((p) => p.url),
        control: handle.control,
        close: async () => {
          await handle.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  };
}
