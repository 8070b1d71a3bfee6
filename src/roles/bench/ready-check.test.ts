import { describe, expect, test } from "bun:test";
import { KvcrError } from "../../lib/errors.ts";
import { READY_RETRY_MS, waitUntilReady } from "./ready-check.ts";
import type { RequestRecord } from "./send-request.ts";

const rec = (ok: boolean): RequestRecord => ({ ok, sentMs: 0, ttftMs: 1, itlMs: [], e2elMs: 1, promptTokens: 1, outputTokens: 1, ...(ok ? {} : { errorKind: "connection", error: "refused" }) });

/** A virtual clock moved only by the check's waits. */
function clock() {
  let t = 0;
  return { now: () => t, sleep: async (ms: number) => void (t += ms) };
}

describe("--ready-check-timeout-sec", () => {
  test("retries until a test request completes", async () => {
    const answers = [false, false, true];
    let sent = 0;
    await waitUntilReady(10, { ...clock(), send: async () => rec(answers[sent++]!) });
    expect(sent).toBe(3);
  });

  test("gives up at the deadline naming the last error", async () => {
    let sent = 0;
    const c = clock();
    const err = await waitUntilReady(3, { ...c, send: async () => (sent++, rec(false)) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KvcrError);
    expect((err as Error).message).toContain("no test request completed in time (last: refused)");
    // Attempts at 0, 1, 2 and 3 s: the last one still within the 3 s.
    expect(sent).toBe(Math.floor(3000 / READY_RETRY_MS) + 1);
  });
});
