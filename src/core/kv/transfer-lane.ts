// A FIFO bandwidth lane (device-to-host or host-to-device copies): transfers run one after
// another at a fixed bandwidth, as Dynamo's mocker models its offload lanes.

/** One copy through a lane: its size and how long the lane takes to move it (ms, engine clock). */
export interface TransferOp {
  bytes: number;
  ms: number;
}

export class TransferLane {
  /** Copies submitted since the engine last took them (MockEngine.step hands them out). */
  ops: TransferOp[] = [];
  /** Bytes per millisecond; Infinity = instant (bandwidth 0 means "no limit"). */
  private readonly bytesPerMs: number;
  private tailMs = 0;

  constructor(bandwidthGbps: number) {
    // GB/s (decimal) → bytes per ms.
    this.bytesPerMs = bandwidthGbps > 0 ? bandwidthGbps * 1e6 : Infinity;
  }

  /** Queues `bytes` not before `notBeforeMs`; returns when the transfer lands. */
  submit(notBeforeMs: number, bytes: number): number {
    const startMs = Math.max(notBeforeMs, this.tailMs);
    const ms = this.bytesPerMs === Infinity ? 0 : bytes / this.bytesPerMs;
    this.tailMs = startMs + ms;
    this.ops.push({ bytes, ms });
    return this.tailMs;
  }
}
