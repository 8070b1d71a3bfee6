// `kvcr-mock agent`: the KV state agent. Runs until SIGINT/SIGTERM (exit 0), a failed
// start-up (exit 1; a bad --static-sources file exits 2) or a crash (exit 1); every path withdraws
// the agent's records first.
import { agentOptions, agentProblems } from "../config/agent.ts";
import { start } from "../roles/agent/start.ts";
import { defineRoleCommand } from "./define-command.ts";

export const agentCommand = defineRoleCommand({
  name: "agent",
  description: "Run the KV state agent: ingest raw vLLM KV-event streams, publish normalized router events",
  options: agentOptions,
  refine: agentProblems,
  run: (config, { logger, serve }) => serve(() => start(config, { logger })),
});
