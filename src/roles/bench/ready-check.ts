// vLLM's --ready-check-timeout-sec: before measuring, send the workload's first request until one
// completes or the time is up (the server may still be starting). Like vLLM's, this request is
// not counted, so the server sees one more request than the result.
import { KvcrError } from "../../lib/errors.ts";
import type { RequestRecord } from "./send-request.ts";

/** Between attempts: long enough not to hammer a starting server, short next to a start-up. */
export const READY_RETRY_MS = 1_000;

export interface ReadyCheckDeps {
  /** Sends the test request. */
  send(): Promise<RequestRecord>;
  now(): number;
  sleep(ms: number): Promise<void>;
  stop?: AbortSignal;
}

/** Resolves once a test request completes; throws naming the last error when timeoutS passes first. */
export async function waitUntilReady(timeoutS: number, deps: ReadyCheckDeps): Promise<void> {
  const deadline = deps.now() + timeoutS * 1000;
  for (;;) {
    const rec = await deps.send();
    if (rec.ok || deps.stop?.aborted) return;
    if (deps.now() + READY_RETRY_MS > deadline) {
      throw new KvcrError("NOT_READY", `--ready-check-timeout-sec ${timeoutS}: no test request completed in time (last: ${rec.error ?? rec.errorKind}); nothing was measured`);
    }
    await deps.sleep(READY_RETRY_MS);
  }
}
