// Probes ejected workers back into routing: while any worker is ejected, a sweep every 250 ms asks
// the routing state which are due (worker-health.ts keeps the backoff) and GETs their /health
// (the mocker's HTTP /health, next to the record's request_url); 200 brings a worker back.
import type { RoutingState } from "./routing-state.ts";

/** True when the worker's /health answered 200 within `timeoutMs` (default 2 s). */
export type ProbeWorker = (healthUrl: string, timeoutMs?: number) => Promise<boolean>;

const SWEEP_MS = 250;
const PROBE_TIMEOUT_MS = 2000;

export const fetchProbe: ProbeWorker = async (url, timeoutMs = PROBE_TIMEOUT_MS) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  await res.arrayBuffer();
  return res.status === 200;
};

/** The /health URL of the process that serves `requestUrl`. */
export function healthUrlOf(requestUrl: string): string {
  return new URL("/health", requestUrl).href;
}

export class HealthProbe {
  private timer: ReturnType<typeof setInterval> | undefined;
  private closed = false;

  constructor(
    private readonly state: RoutingState,
    private readonly probe: ProbeWorker = fetchProbe,
  ) {}

  /** Called after requests end: starts the sweep when some worker is ejected (cheap otherwise). */
  wake(): void {
    if (this.timer !== undefined || this.closed || this.state.health.ejectedCount === 0) return;
    this.timer = setInterval(() => void this.sweep(), SWEEP_MS);
    this.timer.unref?.();
  }

  /** Probes every ejected worker that is due; resolves when those probes have ended. */
  async sweep(): Promise<void> {
    const due = this.state.probeDue();
    await Promise.all(
      due.map(async (w) => {
        const ok = await this.probe(healthUrlOf(w.record.request_url)).catch(() => false);
        this.state.probed(w.id, ok);
      }),
    );
    if (this.state.health.ejectedCount === 0) this.stop();
  }

  close(): void {
    this.closed = true;
    this.stop();
  }

  private stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
