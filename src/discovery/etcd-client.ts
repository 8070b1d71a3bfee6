// A small etcd v3 client over etcd's JSON gateway (grpc-gateway, etcd ≥ 3.4): unary POSTs to
// /v3/kv/*, /v3/lease/*, and the streaming /v3/watch read as newline-delimited JSON. Plain fetch,
// nothing loaded at run time (the `etcd3` npm client reads rpc.proto from node_modules, which the
// compiled binary does not carry). Several endpoints are tried in turn; the last good one is kept.
import { KvcrError } from "../lib/errors.ts";
import { parseEtcdEndpoints } from "../protocol/etcd-endpoints.ts";
import { EtcdEpoch } from "./etcd-epoch.ts";
import type { EtcdHeader, EtcdWatchResult } from "./etcd-gateway.ts";

/** Connection status as /health and /metrics report it. */
export interface EtcdConnectionStatus {
  connected: boolean;
  /** The endpoint of the last successful request (or the first configured one). */
  endpoint: string;
  lastError?: string;
  /** Requests that failed on one endpoint and moved to the next. */
  failovers: number;
  /** Transitions from disconnected back to connected. */
  reconnects: number;
}

/** gRPC UNAVAILABLE: the member cannot serve now (no leader, leader changed, a timeout inside etcd). */
const GRPC_UNAVAILABLE = 14;
/** How long UNAVAILABLE answers are retried, every member in turn, before the caller gets one: an election's length. */
export const UNAVAILABLE_RETRY_MS = 2_000;
const UNAVAILABLE_PAUSE_MS = 100;

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

export function b64(text: string): string {
  return Buffer.from(textEncoder.encode(text)).toString("base64");
}

export function unb64(data: string | undefined): string {
  return data === undefined ? "" : textDecoder.decode(Buffer.from(data, "base64"));
}

/** The range end that makes `[key, end)` every key starting with `prefix` (etcd's prefix rule). */
export function prefixRangeEnd(prefix: string): string {
  const bytes = Buffer.from(textEncoder.encode(prefix));
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = bytes.subarray(0, i + 1);
      end[i] = bytes[i]! + 1;
      return end.toString("base64");
    }
  }
  return Buffer.from([0]).toString("base64"); // every key
}

/** Parses `--etcd-endpoints` (comma-separated http(s) URLs); throws naming the bad one. */
export function parseEndpoints(spec: string | readonly string[]): string[] {
  const parsed = parseEtcdEndpoints(spec);
  if (!parsed.ok) throw new KvcrError("ETCD_ENDPOINTS_INVALID", `etcd endpoints: ${parsed.problem}`);
  return parsed.endpoints;
}

/** A gateway reply that is an etcd error (e.g. "requested lease not found"), not a transport one. */
export class EtcdServerError extends KvcrError {
  constructor(
    readonly path: string,
    readonly grpcCode: number,
    message: string,
  ) {
    super("ETCD_SERVER_ERROR", `etcd ${path}: ${message}`);
  }
}

export interface EtcdClientOptions {
  endpoints: readonly string[];
  /** Per-attempt timeout of a unary request. */
  requestTimeoutMs?: number;
  onStatusChange?(status: EtcdConnectionStatus): void;
}

export class EtcdClient {
  private readonly endpoints: string[];
  private current = 0;
  /** Endpoints the member probe found not answering. */
  private readonly silent = new Set<number>();
  /** Per endpoint: aborted when the member is abandoned, ending every request under way on it. */
  private readonly abandons: AbortController[];
  private readonly timeoutMs: number;
  readonly status: EtcdConnectionStatus;
  /** Every reply's header goes through it, so an etcd wiped or replaced is noticed by any request. */
  readonly epoch = new EtcdEpoch();

  constructor(private readonly opts: EtcdClientOptions) {
    this.endpoints = [...opts.endpoints];
    this.abandons = this.endpoints.map(() => new AbortController());
    this.timeoutMs = opts.requestTimeoutMs ?? 5_000;
    this.status = { connected: true, endpoint: this.endpoints[0]!, failovers: 0, reconnects: 0 };
  }

  /** The index of the member in use (the first every request tries). */
  get inUse(): number {
    return this.current;
  }

  /**
   * The member probe's verdict on endpoint `index`: one that does not answer is tried last, and a
   * reply from it does not make it the member in use again.
   */
  setAnswering(index: number, answering: boolean): void {
    if (answering) this.silent.delete(index);
    else this.silent.add(index);
  }

  /**
   * Makes endpoint `index` the member in use and abandons the one before it: its requests under
   * way (a hung member's never end on their own) are aborted and go on with the next endpoint,
   * and a watch stream on it ends with an error.
   */
  switchTo(index: number): void {
    if (index === this.current || index < 0 || index >= this.endpoints.length) return;
    const from = this.current;
    this.current = index;
    this.status.endpoint = this.endpoints[index]!;
    this.abandons[from]!.abort(new KvcrError("ETCD_MEMBER_ABANDONED", `etcd member ${this.endpoints[from]} abandoned (it does not answer)`));
    this.abandons[from] = new AbortController();
  }

  /** The order to try endpoints in: the one in use, then the others, those not answering last. */
  private order(): number[] {
    const ring = this.endpoints.map((_, k) => (this.current + k) % this.endpoints.length);
    return [...ring.filter((k) => !this.silent.has(k)), ...ring.filter((k) => this.silent.has(k))];
  }

  /** A request got through on `index`: it is the member in use unless the probe says it is silent. */
  private answeredOn(index: number): void {
    if (!this.silent.has(index) || this.silent.has(this.current)) this.current = index;
    this.markUp(this.endpoints[this.current]!);
  }

  /**
   * POSTs `body` to `path`, trying each endpoint once starting from the member in use. An
   * UNAVAILABLE answer (no leader, leader changed: an election under way) moves on to the next
   * member too, and rounds are tried again for a while (every request here is safe to repeat).
   */
  async call<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    let giveUpAt: number | undefined; // counted from the first such answer (etcd may take seconds to give it)
    for (;;) {
      const round = await this.callRound<T>(path, body, signal);
      if (round.ok) return round.doc;
      giveUpAt ??= Date.now() + Math.min(this.timeoutMs, UNAVAILABLE_RETRY_MS);
      if (Date.now() >= giveUpAt || signal?.aborted) throw round.unavailable;
      await Bun.sleep(UNAVAILABLE_PAUSE_MS);
    }
  }

  /** One try on each endpoint; `ok: false` when every member that answered said UNAVAILABLE. */
  private async callRound<T>(path: string, body: unknown, signal?: AbortSignal): Promise<{ ok: true; doc: T } | { ok: false; unavailable: EtcdServerError }> {
    let lastErr: unknown;
    let unavailable: EtcdServerError | undefined;
    const mark = this.epoch.mark();
    const order = this.order();
    for (let attempt = 0; attempt < order.length; attempt++) {
      const index = order[attempt]!;
      const endpoint = this.endpoints[index]!;
      let res: Response;
      let text: string;
      try {
        const timeout = AbortSignal.timeout(this.timeoutMs);
        const abandoned = this.abandons[index]!.signal;
        res = await fetch(`${endpoint}${path}`, {
          method: "POST",
          body: JSON.stringify(body),
          headers: { "content-type": "application/json" },
          signal: AbortSignal.any(signal ? [signal, timeout, abandoned] : [timeout, abandoned]),
        });
        text = await res.text();
      } catch (err) {
        if (signal?.aborted) throw err;
        lastErr = err;
        if (attempt + 1 < order.length) this.status.failovers++;
        continue;
      }
      this.answeredOn(index);
      let doc: Record<string, unknown>;
      try {
        doc = JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw new KvcrError("ETCD_BAD_REPLY", `etcd ${endpoint}${path}: HTTP ${res.status}, reply is not JSON: ${text.slice(0, 200)}`);
      }
      // Unary errors come as {error: "…", code}; streaming ones (lease keepalive) as HTTP 200 with
      // {error: {grpc_code, message}} — both are etcd's answer, never a reply to read fields from.
      const streamError = typeof doc.error === "object" && doc.error !== null ? (doc.error as { grpc_code?: number; message?: string }) : undefined;
      if (!res.ok || typeof doc.error === "string" || streamError) {
        const err = new EtcdServerError(path, Number(streamError?.grpc_code ?? doc.code ?? 0), String(streamError?.message ?? doc.message ?? doc.error ?? `HTTP ${res.status}`));
        if (err.grpcCode !== GRPC_UNAVAILABLE) throw err;
        unavailable = err; // another member may have a leader
        continue;
      }
      // Lease keep-alive is a stream on the gateway: its header sits under `result`.
      this.epoch.observe(mark, (doc.header ?? (doc.result as { header?: EtcdHeader } | undefined)?.header) as EtcdHeader | undefined);
      return { ok: true, doc: doc as T };
    }
    if (unavailable) return { ok: false, unavailable };
    const message = `etcd unreachable at ${this.endpoints.join(", ")}: ${(lastErr as Error)?.message ?? String(lastErr)}`;
    this.markDown(message);
    throw new KvcrError("ETCD_UNREACHABLE", message, { cause: lastErr });
  }

  /**
   * Opens one /v3/watch stream and yields each result. Ends when the server closes it; throws on
   * a transport error (the caller reconnects). `signal` aborts it. `onOpened` hears which
   * endpoint (index) it rides.
   */
  async *watch(createRequest: Record<string, unknown>, signal: AbortSignal, onOpened?: (index: number) => void): AsyncGenerator<EtcdWatchResult> {
    let res: Response | undefined;
    let lastErr: unknown;
    let on = this.current;
    const mark = this.epoch.mark();
    for (const index of this.order()) {
      try {
        // Abandoning the member ends the stream too: a hung member would hold it open forever.
        res = await fetch(`${this.endpoints[index]}/v3/watch`, { method: "POST", body: JSON.stringify({ create_request: createRequest }), signal: AbortSignal.any([signal, this.abandons[index]!.signal]) });
        on = index;
        break;
      } catch (err) {
        if (signal.aborted) return;
        lastErr = err;
      }
    }
    if (!res) {
      const message = `etcd watch: unreachable at ${this.endpoints.join(", ")}: ${(lastErr as Error)?.message ?? String(lastErr)}`;
      this.markDown(message);
      throw new KvcrError("ETCD_UNREACHABLE", message, { cause: lastErr });
    }
    if (!res.ok || !res.body) throw new KvcrError("ETCD_BAD_REPLY", `etcd watch: HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    this.answeredOn(on);
    onOpened?.(on);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffered += decoder.decode(value, { stream: true });
        for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (line.length === 0) continue;
          const doc = JSON.parse(line) as { result?: EtcdWatchResult; error?: { message?: string } };
          if (doc.error) throw new KvcrError("ETCD_WATCH_FAILED", `etcd watch: ${doc.error.message ?? JSON.stringify(doc.error)}`);
          if (doc.result) {
            // `created` carries etcd's current revision; event headers may lag it (history replayed).
            this.epoch.observe(mark, doc.result.header, doc.result.created === true);
            yield doc.result;
          }
        }
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
  }

  markDown(message: string): void {
    this.status.lastError = message;
    if (!this.status.connected) return;
    this.status.connected = false;
    this.opts.onStatusChange?.(this.status);
  }

  private markUp(endpoint: string): void {
    this.status.endpoint = endpoint;
    if (this.status.connected) return;
    this.status.connected = true;
    this.status.reconnects++;
    this.opts.onStatusChange?.(this.status);
  }
}
