// The KV transfer figures of one mocker process, both sides: pulls served and made, bytes, the pull
// time histogram (vLLM's NixlConnector names where vLLM has one), blocks held for pulls, holds that
// timed out, and pulls that fell back to local recompute.
import { HistogramSeries } from "../../../protocol/prometheus-histogram.ts";
import type { MetricFamily } from "../../../protocol/prometheus.ts";

/** Seconds: 1 ms to 10 s (a 128k-token prompt at 64 GB/s takes ~0.26 s). */
const XFER_TIME_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Bytes: 1 MiB to 64 GiB by powers of 4. */
const XFER_BYTES_BUCKETS = Array.from({ length: 9 }, (_, i) => 2 ** (20 + 2 * i));

export class TransferStats {
  /** Decode side: pulls that landed, their bytes, and their time on the model clock. */
  transfers = 0;
  bytes = 0;
  readonly xferTime = new HistogramSeries(XFER_TIME_BUCKETS, "python");
  readonly xferBytes = new HistogramSeries(XFER_BYTES_BUCKETS, "python");
  /** Decode side: pulls refused or unanswered (unknown or dead prefill engine), recomputed here. */
  recomputedPulls = 0;
  /** Prefill side: holds ended by a decode worker's pull, and by the hold timeout. */
  pulledHolds = 0;
  holdTimeouts = 0;

  constructor(
    private readonly mode: string,
    /** Blocks held for pulls now (prefill side), read at scrape time. */
    private readonly heldBlocks: () => number,
  ) {}

  landed(bytes: number, transferMs: number): void {
    this.transfers++;
    this.bytes += bytes;
    this.xferTime.observe(transferMs / 1000);
    this.xferBytes.observe(bytes);
  }

  families(): MetricFamily[] {
    const labels = { disaggregation_mode: this.mode };
    const one = (name: string, type: "counter" | "gauge", help: string, value: number): MetricFamily => ({ name, type, help, samples: [{ labels, value }] });
    return [
      one("kvcr_mocker_kv_transfers_total", "counter", "Remote prefill pulls that landed (decode side)", this.transfers),
      one("kvcr_mocker_kv_transfer_bytes_total", "counter", "Bytes of the landed pulls, as their time was modelled (decode side)", this.bytes),
      { name: "vllm:nixl_xfer_time_seconds", type: "histogram", help: "Histogram of transfer duration for NIXL KV Cache transfers.", samples: this.xferTime.samples(labels) },
      { name: "vllm:nixl_bytes_transferred", type: "histogram", help: "Histogram of bytes transferred per NIXL KV Cache transfers.", samples: this.xferBytes.samples(labels) },
      one("kvcr_mocker_kv_recomputed_pulls_total", "counter", "Remote prefills computed here instead: the named prefill engine was unknown, dead or no longer held the blocks (decode side)", this.recomputedPulls),
      one("kvcr_mocker_kv_held_blocks", "gauge", "Blocks of finished requests held for a decode worker to pull (prefill side)", this.heldBlocks()),
      one("kvcr_mocker_kv_pulled_holds_total", "counter", "Holds ended by a decode worker's pull (prefill side)", this.pulledHolds),
      one("kvcr_mocker_kv_hold_timeouts_total", "counter", "Holds freed unpulled after --kv-transfer-hold-timeout (prefill side)", this.holdTimeouts),
    ];
  }
}
