// A small etcd v3 client over etcd's JSON gateway (grpc-gateway, etcd ≥ 3.4): unary POSTs to
// /v3/kv/*, /v3/lease/*, and the streaming /v3/watch read as newline-delimited JSON. Plain fetch,
// nothing loaded at run time (the `etcd3` npm client reads rpc.proto from node_modules, which the
// compiled binary does not carry). Several endpoints are tried in turn; the last good one is kept.
import { KvcrError } from "../lib/errors.ts";
import { parseEtcdEndpoints } from "../protocol/etcd-endpoints.ts";
import { EtcdEpoch } from "./etcd-epoch.ts";

/** etcd's int64 fields travel as decimal strings in the gateway's JSON; kept as strings/bigint. */
export interface EtcdHeader {
  cluster_id?: string;
  revision?: string;
}

export interface EtcdKv {
  key: string; // base64
  value?: string; // base64
  create_revision?: string;
  mod_revision?: string;
  version?: string;
  lease?: string;
}

export interface EtcdWatchEvent {
  type?: "PUT" | "DELETE"; // PUT is the proto default, so the gateway omits it
  kv: EtcdKv;
  prev_kv?: EtcdKv;
}

export interface EtcdWatchResult {
  header?: EtcdHeader;
  created?: boolean;
  canceled?: boolean;
  compact_revision?: string;
  cancel_reason?: string;
  events?: EtcdWatchEvent[];
}

export type TxnOp =
  | { request_put: { key: string; value: string; lease?: string } }
  | { request_delete_range: { key: string } };

export interface TxnCompare {
  key: string;
  target: "MOD" | "CREATE";
  mod_revision?: string;
  create_revision?: string;
  result: "EQUAL";
}

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
  private readonly timeoutMs: number;
  readonly status: EtcdConnectionStatus;
  /** Every reply's header goes through it, so an etcd wiped or replaced is noticed by any request. */
  readonly epoch = new EtcdEpoch();

  constructor(private readonly opts: EtcdClientOptions) {
    this.endpoints = [...opts.endpoints];
    this.timeoutMs = opts.requestTimeoutMs ?? 5_000;
    this.status = { connected: true, endpoint: this.endpoints[0]!, failovers: 0, reconnects: 0 };
  }

  /** POSTs `body` to `path`, trying each endpoint once starting from the last good one. */
  async call<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    let lastErr: unknown;
    const mark = this.epoch.mark();
    for (let attempt = 0; attempt < this.endpoints.length; attempt++) {
      const index = (this.current + attempt) % this.endpoints.length;
      const endpoint = this.endpoints[index]!;
      let res: Response;
      try {
        const timeout = AbortSignal.timeout(this.timeoutMs);
        res = await fetch(`${endpoint}${path}`, {
          method: "POST",
          body: JSON.stringify(body),
          headers: { "content-type": "application/json" },
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
      } catch (err) {
        if (signal?.aborted) throw err;
        lastErr = err;
        if (attempt + 1 < this.endpoints.length) this.status.failovers++;
        continue;
      }
      const text = await res.text();
      this.current = index;
      this.markUp(endpoint);
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
        throw new EtcdServerError(path, Number(streamError?.grpc_code ?? doc.code ?? 0), String(streamError?.message ?? doc.message ?? doc.error ?? `HTTP ${res.status}`));
      }
      // Lease keep-alive is a stream on the gateway: its header sits under `result`.
      this.epoch.observe(mark, (doc.header ?? (doc.result as { header?: EtcdHeader } | undefined)?.header) as EtcdHeader | undefined);
      return doc as T;
    }
    const message = `etcd unreachable at ${this.endpoints.join(", ")}: ${(lastErr as Error)?.message ?? String(lastErr)}`;
    this.markDown(message);
    throw new KvcrError("ETCD_UNREACHABLE", message, { cause: lastErr });
  }

  /**
   * Opens one /v3/watch stream and yields each result. Ends when the server closes it; throws on
   * a transport error (the caller reconnects). `signal` aborts it.
   */
  async *watch(createRequest: Record<string, unknown>, signal: AbortSignal): AsyncGenerator<EtcdWatchResult> {
    let res: Response | undefined;
    let lastErr: unknown;
    const mark = this.epoch.mark();
    for (let attempt = 0; attempt < this.endpoints.length && !res; attempt++) {
      const index = (this.current + attempt) % this.endpoints.length;
      try {
        res = await fetch(`${this.endpoints[index]}/v3/watch`, { method: "POST", body: JSON.stringify({ create_request: createRequest }), signal });
        this.current = index;
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
    this.markUp(this.endpoints[this.current]!);
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
