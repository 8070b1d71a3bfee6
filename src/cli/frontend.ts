// `kvcr-mock frontend`: the OpenAI-compatible HTTP frontend with its KV-aware router.
// Runs until SIGINT/SIGTERM (exit 0), a failed start-up (exit 1) or a crash (exit 1).
import { frontendOptions, frontendProblems } from "../config/frontend.ts";
import { startFrontend } from "../roles/frontend/start.ts";
import { defineRoleCommand } from "./define-command.ts";

export const frontendCommand = defineRoleCommand({
  name: "frontend",
  description: "Run the OpenAI-compatible HTTP frontend with its KV-aware router (--router-mode picks how it routes)",
  options: frontendOptions,
  refine: frontendProblems,
  run: (config, { logger, serve }) => serve(() => startFrontend(config, { logger })),
});
