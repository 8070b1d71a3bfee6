// Prefill side of a KV hand-over: the finished do_remote_decode requests whose blocks stay referenced
// for a decode worker to pull (vLLM NixlConnector's delayed free), each until the decode side says
// it has read them or the hold timeout passes (counted), then freed back to the prefix cache.
import type { Logger } from "../../../lib/logger.ts";
import type { TransferStats } from "./transfer-stats.ts";

export interface HoldingEngine {
  releaseHeld(requestId: string): boolean;
}

interface Hold {
  engine: HoldingEngine;
  engineId: string;
  blockIds: ReadonlySet<number>;
  timer: ReturnType<typeof setTimeout>;
}

export type PullAnswer = { ok: true; blocks: number } | { ok: false; status: 400 | 404; message: string };

export class HeldTransfers {
  /** By request id (unique in the process). */
  private readonly holds = new Map<string, Hold>();
  blocks = 0;

  constructor(
    private readonly timeoutMs: number,
    private readonly stats: TransferStats,
    private readonly logger: Logger,
  ) {}

  hold(engine: HoldingEngine, engineId: string, requestId: string, blockIds: readonly number[]): void {
    const timer = setTimeout(() => {
      if (this.end(requestId)) {
        this.stats.holdTimeouts++;
        this.logger.warn(`request ${requestId} on ${engineId}: ${blockIds.length} held block(s) were not pulled within the hold timeout; freed`);
      }
    }, this.timeoutMs);
    timer.unref?.();
    this.holds.set(requestId, { engine, engineId, blockIds: new Set(blockIds), timer });
    this.blocks += blockIds.length;
  }

  /** A decode worker asks for `blockIds` of a held request: each must be one it holds. */
  pull(engineId: string, requestId: string, blockIds: readonly number[]): PullAnswer {
    const h = this.holds.get(requestId);
    if (h === undefined || h.engineId !== engineId) return { ok: false, status: 404, message: `engine ${engineId} holds no blocks for request ${requestId} (unknown, already pulled, or past the hold timeout)` };
    const foreign = blockIds.find((b) => !h.blockIds.has(b));
    if (foreign !== undefined) return { ok: false, status: 400, message: `remote_block_ids: block ${foreign} is not one request ${requestId} holds` };
    return { ok: true, blocks: blockIds.length };
  }

  /** The decode side has read the blocks (or will not): free them. False when not held. */
  done(engineId: string, requestId: string): boolean {
    const h = this.holds.get(requestId);
    if (h === undefined || h.engineId !== engineId) return false;
    this.end(requestId);
    this.stats.pulledHolds++;
    return true;
  }

  /** The process is closing: timers stop (the engines go with it). */
  close(): void {
    for (const h of this.holds.values()) clearTimeout(h.timer);
    this.holds.clear();
    this.blocks = 0;
  }

  private end(requestId: string): boolean {
    const h = this.holds.get(requestId);
    if (h === undefined) return false;
    clearTimeout(h.timer);
    this.holds.delete(requestId);
    this.blocks -= h.blockIds.size;
    h.engine.releaseHeld(requestId);
    return true;
  }
}
