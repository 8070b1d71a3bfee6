// A mocker process's side in disaggregated serving (--disaggregation-mode): prefill forces max_tokens
// 1 and holds a do_remote_decode request's blocks, answering NixlConnector's params; decode pulls a
// do_remote_prefill request's missing blocks first (or, failing that, computes them: counted). Under
// Dynamo's rendezvous (a request with `bootstrap`) the prefill completes the request's room instead
// and its blocks go when the decode has met it; the decode meets the room, then loads the prompt.
import type { DisaggregationMode } from "../../../config/disaggregation.ts";
import type { EngineRequest, RemoteLoad } from "../../../core/engine/engine-types.ts";
import type { GenerateRequest } from "../../../protocol/generate.ts";
import { nixlReplyParams, type RemotePrefill } from "../../../protocol/kv-transfer-params.ts";
import type { Logger } from "../../../lib/logger.ts";
import type { SubmitOutcome } from "../generation.ts";
import type { TokenSink } from "../token-stream.ts";
import type { HeldTransfers } from "./held-transfers.ts";
import type { BootstrapInfo } from "../../../protocol/dynamo/bootstrap.ts";
import { meetPrefill, type Meeting } from "./handoff-destination.ts";
import type { BootstrapRooms } from "./bootstrap-rooms.ts";
import { notifyDone, requestPull, type PullOutcome } from "./pull-client.ts";
import type { TransferStats } from "./transfer-stats.ts";

export type EngineFlags = Pick<EngineRequest, "holdBlocks" | "remotePrefill">;
export type ToEngine = (req: GenerateRequest, sink: TokenSink, flags: EngineFlags) => SubmitOutcome;

/** What the side needs of one (worker, rank). */
export interface DisaggRank {
  readonly worker: number;
  readonly rank: number;
  readonly engine: { localPrefixBlocks(tokenIds: ArrayLike<number>, loraName?: string): number; releaseHeld(id: string): boolean };
}

/** vLLM names a data-parallel engine `<engine id>_dp<rank>`; here the engine id is the worker id. */
export function engineIdOf(workerId: string, rank: number): string {
  return `${workerId}_dp${rank}`;
}

/** How long a decode rank waits for the prefill side's answer before computing the prompt itself. */
export const PULL_TIMEOUT_MS = 5000;

export interface DisaggSideOptions {
  mode: DisaggregationMode;
  workerIds: readonly string[];
  stats: TransferStats;
  logger: Logger;
  /** Prefill: the held blocks and where decode workers reach them. */
  held?: HeldTransfers;
  endpoint?: { host: string; port: number };
  pullTimeoutMs?: number;
  /** Prefill under Dynamo's rendezvous: the rooms its bootstrap ports answer from. */
  rooms?: BootstrapRooms;
  /** Decode: how a room is met (tests inject their own). */
  meet?: (m: Meeting) => Promise<PullOutcome>;
  /** Decode: tokens per block, to say how many prompt tokens a hand-over brings. */
  blockSize?: number;
}

export class DisaggSide {
  /** Decode: where each pulling request's blocks came from (to say when they landed), by request id. */
  private readonly pulling = new Map<string, RemotePrefill>();
  /** Prefill: the room of each request still running under a rendezvous, by request id. */
  private readonly roomOf = new Map<string, { room: bigint; promptTokens: number }>();
  private readonly pullTimeoutMs: number;

  constructor(private readonly o: DisaggSideOptions) {
    this.pullTimeoutMs = o.pullTimeoutMs ?? PULL_TIMEOUT_MS;
  }

  get mode(): DisaggregationMode {
    return this.o.mode;
  }

  submit(req: GenerateRequest, sink: TokenSink, rank: DisaggRank | undefined, toEngine: ToEngine): SubmitOutcome | Promise<SubmitOutcome> {
    const params = req.kvTransferParams;
    if (this.o.mode === "prefill") {
      const room = this.o.rooms !== undefined ? req.bootstrap?.room : undefined;
      const outcome = toEngine({ ...req, maxTokens: 1 }, sink, { holdBlocks: params?.doRemoteDecode === true || room !== undefined });
      if (outcome.ok && room !== undefined) this.roomOf.set(outcome.requestId, { room, promptTokens: req.tokenIds.length });
      return outcome;
    }
    if (this.o.mode === "decode" && req.bootstrap !== undefined && rank !== undefined) return this.meetThenSubmit(req, sink, rank, req.bootstrap, toEngine);
    const remote = params?.remotePrefill;
    // An unknown worker or rank gets its 404 from the engine path.
    if (this.o.mode !== "decode" || remote === undefined || rank === undefined) return toEngine(req, sink, {});
    return this.pullThenSubmit(req, sink, rank, remote, toEngine);
  }

  /** Prefill: a held request finished; its reply params (undefined on other sides). */
  finished(rank: DisaggRank, requestId: string, blockIds: number[]): Record<string, unknown> | undefined {
    const { held, endpoint } = this.o;
    if (held === undefined || endpoint === undefined) return undefined;
    const engineId = engineIdOf(this.workerId(rank.worker), rank.rank);
    held.hold(rank.engine, engineId, requestId, blockIds);
    const open = this.roomOf.get(requestId);
    if (open !== undefined) {
      this.roomOf.delete(requestId);
      this.o.rooms!.complete(open.room, open.promptTokens, () => held.done(engineId, requestId));
    }
    return nixlReplyParams({ engineId, requestId, blockIds, host: endpoint.host, port: endpoint.port });
  }

  /** Decode: pulls landed on `rank`'s clock; the prefill side may free their blocks. */
  landed(loads: readonly RemoteLoad[]): void {
    for (const l of loads) {
      this.o.stats.landed(l.bytes, l.transferMs);
      const remote = this.pulling.get(l.requestId);
      if (remote === undefined) continue;
      this.pulling.delete(l.requestId);
      notifyDone(remote, this.pullTimeoutMs);
    }
  }

  /** A request ended (finished or cancelled): forget where it pulls from. */
  forget(requestId: string): void {
    this.pulling.delete(requestId);
    // A prefill that ends with its room still open (cancelled) will never hand its KV over.
    const open = this.roomOf.get(requestId);
    if (open !== undefined) {
      this.roomOf.delete(requestId);
      this.o.rooms!.abort(open.room);
    }
  }

  private async meetThenSubmit(req: GenerateRequest, sink: TokenSink, rank: DisaggRank, info: BootstrapInfo, toEngine: ToEngine): Promise<SubmitOutcome> {
    const bs = this.o.blockSize ?? 16;
    const missing = Math.ceil(req.tokenIds.length / bs) - rank.engine.localPrefixBlocks(req.tokenIds, req.loraName);
    const met = await (this.o.meet ?? meetPrefill)({ info, requestId: req.requestId ?? "", dpRank: rank.rank, transferableTokens: Math.max(0, missing) * bs });
    if (met.ok) return toEngine(req, sink, { remotePrefill: true });
    this.o.stats.recomputedPulls++;
    this.o.logger.warn(`worker ${this.workerId(rank.worker)} rank ${rank.rank}: cannot meet the prefill of ${met.reason}; computing the prompt here`);
    return toEngine(req, sink, {});
  }

  private async pullThenSubmit(req: GenerateRequest, sink: TokenSink, rank: DisaggRank, remote: RemotePrefill, toEngine: ToEngine): Promise<SubmitOutcome> {
    // Own prefix hits first: only the blocks past them are named (and, by timing mode, timed).
    const local = Math.min(rank.engine.localPrefixBlocks(req.tokenIds, req.loraName), remote.blockIds.length);
    const pulled = await requestPull(remote, remote.blockIds.slice(local), this.pullTimeoutMs);
    if (!pulled.ok) {
      this.o.stats.recomputedPulls++;
      this.o.logger.warn(`worker ${this.workerId(rank.worker)} rank ${rank.rank}: cannot pull request ${remote.requestId} from engine ${remote.engineId} at ${remote.host}:${remote.port} (${pulled.reason}); computing the prompt here`);
      return toEngine(req, sink, {});
    }
    const outcome = toEngine(req, sink, { remotePrefill: true });
    if (outcome.ok) this.pulling.set(outcome.requestId, remote);
    else notifyDone(remote, this.pullTimeoutMs); // it will never be read: free it now
    return outcome;
  }

  private workerId(worker: number): string {
    return this.o.workerIds[worker] ?? String(worker);
  }
}
