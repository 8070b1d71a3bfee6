// Wiring only: bench's fresh stacks (roles/bench/fresh-stacks.ts) started by the launcher's
// startStack, which roles/bench may not import itself. Also used by bench/*.ts.
import type { Logger } from "../lib/logger.ts";
import type { FreshStack, StartedStack } from "../roles/bench/bench-types.ts";
import { freshStacks } from "../roles/bench/fresh-stacks.ts";
import { startStack } from "../roles/launcher/start.ts";

export function freshStackStarter(stackConfig: string | undefined, logger: Logger, env: Readonly<Record<string, string | undefined>>, logLevel?: string): (fresh: FreshStack) => Promise<StartedStack> {
  return freshStacks(startStack, stackConfig, logger, env, logLevel);
}
