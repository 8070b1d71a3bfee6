// `kvcr-mock up`: the whole stack from one command. Config → runUp; nothing else.
import { STACK_SECTIONS, upOptions, upProblems, upOverlay } from "../config/up.ts";
import { runUp } from "../roles/launcher/run-up.ts";
import { defineRoleCommand } from "./define-command.ts";

export const upCommand = defineRoleCommand({
  name: "up",
  description: "Launch agent + mockers + frontend, wait for readiness, supervise, stop all on Ctrl-C (-- CMD runs CMD against the ready stack)",
  options: upOptions,
  refine: upProblems,
  overlay: upOverlay,
  sections: STACK_SECTIONS,
  takesRest: true,
  run: (config, { logger, rest, env }) => runUp(config, { logger, rest, env }),
});
