// `kvcr-mock events`: tap a worker's raw KV-event stream (and its replay socket), one JSON line per
// batch on stdout until Ctrl-C or until stdout's reader goes away (exit 0); a role that fails after
// starting exits 1 with the reason.
import { eventsOptions, eventsProblems } from "../config/events.ts";
import { guardOutput } from "../lib/output.ts";
import { start } from "../roles/events/start.ts";
import { defineRoleCommand } from "./define-command.ts";

export const eventsCommand = defineRoleCommand({
  name: "events",
  description: "Tap a worker's raw KV-event stream (and its replay socket) and print decoded JSON lines",
  options: eventsOptions,
  refine: eventsProblems,
  run(config, { logger, serve }) {
    // stdout errors end the tap here (EPIPE from `| head` → exit 0), never inside socket callbacks.
    const out = guardOutput(process.stdout, logger);
    return serve(() => start(config, { logger, out }), { quiet: true, stops: [out.stopped] });
  },
});
