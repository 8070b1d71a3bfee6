// A workload request as every generator yields it: lengths, a trace timestamp, and the prompt
// built on demand (a 12,031-request trace of ~12k-token prompts is never materialized at once).
import type { SessionLink } from "./sessions/session-link.ts";

export interface WorkloadRequest {
  /** The trace's own arrival time (ms); synthetic workloads use 0. */
  readonly timestampMs: number;
  readonly inputLength: number;
  readonly outputLength: number;
  /** The LoRA adapter the request names as its model (a trace row's `lora_name`); absent = the base model. */
  readonly loraName?: string;
  /** Writes the prompt's inputLength token ids into out[0, inputLength). */
  writeTokens(out: Uint32Array): void;
  /** A turn of a multi-turn session: sent only after the turn before it finished (docs/sessions.md). */
  readonly session?: SessionLink;
}
