// The program's own name, version and one-line description: the root command's meta, and the
// parent every command's --help names itself under (`kvcr-mock up`).
import { VERSION } from "../lib/version.ts";
import type { CommandMeta } from "./help.ts";

export const PROGRAM: CommandMeta = {
  name: "kvcr-mock",
  version: VERSION,
  description: "GPU-free KV-cache-aware LLM serving stack: mock vLLM workers with real ZeroMQ KV events, offline trace replay",
};
