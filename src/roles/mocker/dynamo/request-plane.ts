// Dynamo's TCP request plane, worker side: one listener for every worker of the process, frames
// routed by their instance path; each request is acked, submitted to its (worker, rank) engine,
// and answered on a call-home connection to the frontend's response server (handshake, prologue,
// one data frame per engine step, the final item, `complete_final`, the sentinel). `stop` or
// `kill` from the frontend cancels the engine request. A malformed frame is refused naming the
// problem; the worker keeps serving. A prefill worker's one token goes out with the params its
// decode leg will be handed (`disaggregated_params`: NixlConnector's, so a kvcr-mock decode worker
// pulls them; Dynamo's mocker writes "dummy"). The bytes: protocol/dynamo/tcp-frames.ts, generate.ts.
import type { DisaggregationMode } from "../../../config/disaggregation.ts";
import type { GenerateRequest, GenerateSummary } from "../../../protocol/generate.ts";
import { COMPLETE_FINAL, engineOutputItem, errorItem, parseDynamoGenerate, prefillOutputItem, type DynamoGenerate } from "../../../protocol/dynamo/generate.ts";
import { parseKvTransferParams, type KvTransferParams } from "../../../protocol/kv-transfer-params.ts";
import {
  callHomeHandshake, dataFrame, encodeAck, parseRequestControl, parseRequestFrame, parseTwoPart, prologue, SENTINEL, type RequestControl,
} from "../../../protocol/dynamo/tcp-frames.ts";
import { pack, unpack } from "../../../protocol/msgpack.ts";
import type { Logger } from "../../../lib/logger.ts";
import type { Submitter } from "../generation.ts";
import { append } from "../../../transport/tcp/socket-writer.ts";
import { connectTcp, listenTcp, type TcpConnection, type TcpListener } from "../../../transport/tcp/tcp.ts";

export interface RequestPlaneWorker {
  index: number;
  /** The instance path the frontend sends: `{instance hex}/{ns}/{component}/{endpoint}`. */
  path: string;
  dataParallelSize: number;
}

export interface RequestPlaneStats {
  requests: number;
  refused: number;
  cancelled: number;
  unknownFields: number;
}

export interface RequestPlaneOptions {
  host: string;
  workers: readonly RequestPlaneWorker[];
  engines: Submitter;
  logger: Logger;
  maxPromptTokens: number;
  /** Output cap when a request sets no max_tokens. */
  defaultMaxTokens: number;
  /** The workers' side in disaggregated serving (agg by default). */
  mode?: DisaggregationMode;
}

const utf8 = new TextDecoder();
const textEncoder = new TextEncoder();
/** A response item in the request's codec (one per engine step: no encoder made per call). */
const encodeBody = (codec: RequestControl["payloadCodec"], value: unknown) => (codec === "json" ? textEncoder.encode(JSON.stringify(value)) : pack(value));

/** A u64 the frontend sends in JSON, read from its digits (a JSON number past 2^53 is rounded). */
const keepRoom = (key: string, value: unknown, ctx?: { source?: string }) => (key === "bootstrap_room" && ctx?.source !== undefined && /^\d+$/.test(ctx.source) ? BigInt(ctx.source) : value);
const parseJsonBody = (text: string): unknown => (text.includes('"bootstrap_room"') ? JSON.parse(text, keepRoom as (k: string, v: unknown) => unknown) : JSON.parse(text));

export class DynamoRequestPlane implements Disposable {
  readonly port: number;
  readonly stats: RequestPlaneStats = { requests: 0, refused: 0, cancelled: 0, unknownFields: 0 };
  private readonly listener: TcpListener;
  private readonly byPath = new Map<string, RequestPlaneWorker>();
  private readonly buffers = new WeakMap<TcpConnection, Uint8Array>();
  private readonly streams = new Set<TcpConnection>();

  constructor(private readonly opts: RequestPlaneOptions) {
    for (const w of opts.workers) this.byPath.set(w.path, w);
    this.listener = listenTcp(opts.host, 0, {
      data: (conn, chunk) => this.onData(conn, chunk),
      error: (err) => this.opts.logger.debug(`request plane connection error: ${err.message}`),
    });
    this.port = this.listener.port;
  }

  private onData(conn: TcpConnection, chunk: Uint8Array): void {
    let buf = append(this.buffers.get(conn) ?? new Uint8Array(0), chunk);
    for (;;) {
      const frame = parseRequestFrame(buf);
      if (frame === undefined) break;
      if (!frame.ok) {
        // The stream cannot be resynchronised past a broken frame: refuse, then close this connection.
        this.refuse(conn, frame.problem);
        conn.end();
        this.buffers.delete(conn);
        return;
      }
      buf = buf.subarray(frame.used);
      this.onRequest(conn, frame.value.path, frame.value.headers, frame.value.payload);
    }
    this.buffers.set(conn, buf.slice());
  }

  private refuse(conn: TcpConnection, problem: string): void {
    this.stats.refused++;
    this.opts.logger.warn(`request plane: refused a request: ${problem}`);
    conn.write(encodeAck(`Server unavailable: ${problem}`));
  }

  private onRequest(conn: TcpConnection, path: string, headers: Record<string, string>, payload: Uint8Array): void {
    const worker = this.byPath.get(path);
    if (!worker) return this.refuse(conn, `no endpoint ${JSON.stringify(path)} in this process`);
    const two = parseTwoPart(payload);
    if (!two?.ok) return this.refuse(conn, two ? two.problem : "request payload is not a whole two-part message");
    const control = parseRequestControl(two.value.header);
    if (!control.ok) return this.refuse(conn, control.problem);
    let body: unknown;
    try {
      body = control.value.payloadCodec === "json" ? parseJsonBody(utf8.decode(two.value.body)) : unpack(two.value.body);
    } catch (err) {
      return this.refuse(conn, `generate request body is not ${control.value.payloadCodec}: ${(err as Error).message}`);
    }
    const g = parseDynamoGenerate(body, this.opts.maxPromptTokens);
    if (!g.ok) return this.refuse(conn, g.problem);
    const dpRank = g.value.dpRank ?? 0;
    if (dpRank >= worker.dataParallelSize) return this.refuse(conn, `routing.dp_rank ${dpRank} is not a rank of this worker (0..${worker.dataParallelSize - 1})`);
    this.stats.unknownFields += g.value.unknownFields.length;
    conn.write(encodeAck());
    this.stats.requests++;
    // The frontend's request id names the request in our logs (x-request-id when it sent one).
    const requestId = headers["x-request-id"] ?? headers["request-id"] ?? control.value.id;
    this.opts.logger.debug(`request ${requestId} → worker ${worker.index} rank ${dpRank} (${g.value.tokenIds.length} prompt tokens)`);
    const transfer = this.transferParams(g.value);
    this.callHome(control.value, {
      worker: worker.index,
      dpRank,
      tokenIds: g.value.tokenIds,
      maxTokens: g.value.maxTokens ?? this.opts.defaultMaxTokens,
      requestId,
      ...(g.value.loraName ? { loraName: g.value.loraName } : {}),
      ...(g.value.bootstrap ? { bootstrap: g.value.bootstrap } : {}),
      ...(g.value.kvHint ? { kvHint: g.value.kvHint } : {}),
      ...(transfer ? { kvTransferParams: transfer } : {}),
    });
  }

  /** A leg's hand-over in NixlConnector's terms: a prefill holds its KV; a decode pulls what the prefill answered, when it can read it. */
  private transferParams(g: DynamoGenerate): KvTransferParams | undefined {
    if (this.opts.mode === "prefill") return g.bootstrap ? undefined : { doRemoteDecode: true };
    if (this.opts.mode !== "decode" || g.bootstrap || g.disaggregatedParams === undefined) return undefined;
    const p = parseKvTransferParams(g.disaggregatedParams);
    // Another prefill worker's params (Dynamo's mocker sends "dummy"): nothing to pull, the prompt is computed here.
    return p.ok && p.value.remotePrefill ? p.value : undefined;
  }

  private callHome(control: RequestControl, req: GenerateRequest): void {
    const at = control.address.lastIndexOf(":");
    const codec = control.payloadCodec;
    let engineId: string | undefined;
    let done = false;
    let buf: Uint8Array = new Uint8Array(0);
    const cancel = (why: string) => {
      if (done || engineId === undefined) return;
      this.stats.cancelled++;
      this.opts.logger.debug(`request ${req.requestId} cancelled by the frontend (${why})`);
      this.opts.engines.cancel(engineId);
      done = true;
    };
    const start = async (conn: TcpConnection) => {
      this.streams.add(conn);
      conn.write(callHomeHandshake(control.subject));
      // A prefill leg's token waits for the finish, where its hand-over params are known.
      const prefill = this.opts.mode === "prefill";
      let held: number[] = [];
      const sink = {
        tokens: (ids: readonly number[]) => {
          if (prefill) held.push(...ids);
          else conn.write(dataFrame(encodeBody(codec, engineOutputItem([...ids]))));
        },
        finish: (summary: GenerateSummary) => {
          const reason = summary.finish_reason === "cancelled" ? "cancelled" : "length";
          if (held.length > 0) {
            conn.write(dataFrame(encodeBody(codec, prefillOutputItem(held, summary.kv_transfer_params ?? null, summary))));
            held = [];
          }
          conn.write(dataFrame(encodeBody(codec, engineOutputItem([], { reason, usage: summary }))));
          done = true;
          conn.write(dataFrame(encodeBody(codec, COMPLETE_FINAL)));
          conn.write(SENTINEL);
        },
      };
      const outcome = await this.opts.engines.submit(req, sink);
      if (!outcome.ok) {
        done = true;
        if (outcome.status === 503) conn.write(prologue(`${outcome.status}: ${outcome.message}`));
        else {
          // A request this worker cannot serve (an adapter it does not hold, a prompt too long) fails
          // in its stream, as a Python worker's raised error does: an error prologue would make the
          // frontend take the worker itself for unreachable.
          conn.write(prologue(null));
          conn.write(dataFrame(encodeBody(codec, errorItem(`${outcome.status}: ${outcome.message}`))));
          conn.write(dataFrame(encodeBody(codec, COMPLETE_FINAL)));
        }
        conn.write(SENTINEL);
        return;
      }
      engineId = outcome.requestId;
      // The frontend left while a decode leg met its prefill: nothing will read the answer.
      if (done) return this.opts.engines.cancel(engineId);
      conn.write(prologue(null));
    };
    connectTcp(control.address.slice(0, at).replace(/^\[|\]$/g, ""), Number(control.address.slice(at + 1)), {
      opened: (conn) => void start(conn),
      data: (conn, chunk) => {
        buf = append(buf, chunk);
        for (;;) {
          const f = parseTwoPart(buf);
          if (f === undefined) break;
          if (!f.ok) {
            this.opts.logger.warn(`response plane: ${f.problem}; closing the stream`);
            conn.end();
            return;
          }
          buf = buf.subarray(f.used);
          const header = f.value.header.length > 0 ? utf8.decode(f.value.header) : "";
          if (header === '"stop"' || header === '"kill"') cancel(header.slice(1, -1));
          else if (header !== "") this.opts.logger.warn(`response plane: unknown control message ${header.slice(0, 80)}; ignored`);
        }
        buf = buf.slice();
      },
      close: (conn) => {
        this.streams.delete(conn);
        // The frontend went away mid-stream: free the engine request.
        cancel("connection closed");
        done = true;
      },
      error: (err) => this.opts.logger.debug(`response stream error: ${err.message}`),
    }).catch((err: Error) => {
      this.opts.logger.warn(`request ${req.requestId}: cannot call the frontend home at ${control.address}: ${err.message}`);
    });
  }

  [Symbol.dispose](): void {
    this.listener[Symbol.dispose]();
    for (const s of this.streams) s.end();
  }
}
