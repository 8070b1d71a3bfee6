import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../lib/logger.ts";
import type { Residency } from "../../../protocol/residency.ts";
import { waitFor } from "../../../../test/harness.ts";
import { startAudit } from "./audit-loop.ts";
import type { AuditPoint } from "../../../core/audit/index-audit.ts";

const block = (n: number) => ({ seq_hash: String(n), local_hash: String(n) });

/** One mocker and one router in a test server: the router's index holds one block the truth lacks. */
function stackServer() {
  const truth: Residency = { sources: [{ worker_id: "w0", dp_rank: 0, tiers: { device: [block(1), block(2)], host: [], disk: [] } }] };
  const index: Residency = { sources: [{ worker_id: "w0", dp_rank: 0, tiers: { device: [block(1), block(2), block(3)], host: [], disk: [] } }] };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => Response.json(new URL(req.url).pathname === "/v1/index" ? index : truth),
  });
  return { url: `http://127.0.0.1:${server.port}`, [Symbol.dispose]: () => void server.stop(true) };
}

describe("the audit loop", () => {
  for (const keepSamples of [true, false]) {
    test(`keepSamples ${keepSamples}: every point reaches onPoint; the log keeps points and truth only when asked`, async () => {
      using stack = stackServer();
      const seen: AuditPoint[] = [];
      const run = startAudit(performance.now(), {
        logger: createLogger({ level: "silent" }),
        now: () => performance.now(),
        endpoints: { indexUrl: stack.url, mockerUrls: [stack.url] },
        intervalS: 0.02,
        keepSamples,
        onPoint: (p) => seen.push(p),
      });
      await waitFor(() => seen.length >= 3, { timeoutMs: 10_000, what: "three audit points" });
      const log = await run.stop();
      expect(seen[0]!.workers).toEqual({ w0: { precision: 0.6667, recall: 1 } });
      if (keepSamples) {
        expect(log.points.length).toBe(seen.length);
        expect(log.truth.length).toBeGreaterThanOrEqual(seen.length);
      } else {
        expect(log.points).toEqual([]);
        expect(log.truth).toEqual([]);
      }
    });
  }
});
