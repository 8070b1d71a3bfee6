// One client request across its worker attempts (the frontend's Migration operator, after
// Dynamo's): an attempt that never reached its worker goes to the next-best worker
// (--router-retries); one whose worker failed before or during its stream resumes on another
// worker with prompt + the tokens already sent as its prompt and max_tokens less them
// (--migration-limit, --migration-max-seq-len). The reply reads one uninterrupted list of lines
// whose summary counts the original prompt and every token sent. Each failure is reported to the
// routing state, which ejects the worker when the rules say so (worker-health.ts); a stall first
// asks the worker's /health (stall-probe.ts).
import type { Logger } from "../../lib/logger.ts";
import { GenerateLineReader, type GenerateBody, type GenerateLine, type GenerateSummary } from "../../protocol/generate.ts";
import type { FrontendMetrics } from "./metrics.ts";
import type { DecodeLeg } from "./disagg/decode-leg.ts";
import type { RoutingState } from "./routing-state.ts";
import type { RoutePlan } from "./route-plan.ts";
import type { StallProbe } from "./stall-probe.ts";
import { answerAttemptFailure, attemptFailure, unfinishedStream, type AttemptFailure, type WorkerFailure } from "./worker-failure.ts";
import { ClientGone, readAll, WorkerCancel, type Stall, type StallWatch, type WorkerReply, type WorkerTransport } from "./worker-call.ts";

export interface RunPolicy {
  /** --router-retries: attempts after one that never reached its worker. */
  retries: number;
  /** --migration-limit: resumptions on another worker after a failure mid-request. */
  migrationLimit: number;
  /** --migration-max-seq-len: past this many prompt + generated tokens the request is no longer tracked. */
  migrationMaxSeqLen?: number;
}

export interface RunDeps {
  state: RoutingState;
  metrics: FrontendMetrics;
  callWorker: WorkerTransport;
  stalls: StallWatch;
  policy: RunPolicy;
  /** Asks a stalled worker's /health before its stall is reported (without it, a stall counts toward ejection). */
  stallProbe?: StallProbe;
  logger?: Logger;
  /** True once the frontend is stopping: failures are final. */
  closing?: () => boolean;
}

export interface RunRequest {
  model: string;
  /** The client's prompt as token ids. */
  prompt: readonly number[];
  maxTokens: number;
  requestId: string;
  /** The first attempt's route. */
  plan: RoutePlan;
  /** A disaggregated request's decode leg (disagg/decode-leg.ts): what its attempts carry until a token was sent, and how they reroute. */
  leg?: DecodeLeg;
}

/** The request failed for good: `failure` is the client's error. */
export class RunFailed extends Error {
  constructor(readonly failure: WorkerFailure) {
    super(failure.body.error.message);
  }
}

const DECODER = new TextDecoder();

/** One attempt on one worker: its cancel, stall watch and share of the router's load until end(). */
class Attempt {
  readonly ctrl = new WorkerCancel();
  readonly stall: Stall;
  readonly lines = new GenerateLineReader();
  reply: WorkerReply | undefined;
  heardBack = false;
  private ended = false;

  constructor(
    readonly plan: RoutePlan,
    private readonly state: RoutingState,
    stalls: StallWatch,
  ) {
    plan.worker.inflight.add(this.ctrl);
    this.stall = stalls.watch(this.ctrl, plan.worker.id);
  }

  get workerId(): string {
    return this.plan.worker.id;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stall.stop();
    this.plan.worker.inflight.delete(this.ctrl);
    this.state.finish(this.plan);
  }
}

export class RequestRun {
  /** The route of the current attempt. */
  plan: RoutePlan;
  /** Tokens the client has been given, over every attempt. */
  completionTokens = 0;
  private attempt: Attempt | undefined;
  /** Tokens generated so far, kept while the request may still migrate. */
  private generated: number[] | undefined;
  private retriesLeft: number;
  private migrationsLeft: number;
  private attempts = 0;
  private readonly tried = new Set<string>();
  private pending: AttemptFailure | undefined;
  private done = false;
  private finalSent = false;
  private clientGone = false;

  constructor(
    private readonly deps: RunDeps,
    private readonly req: RunRequest,
  ) {
    this.plan = req.plan;
    const { policy } = deps;
    this.retriesLeft = policy.retries;
    this.migrationsLeft = policy.migrationLimit;
    if (this.migrationsLeft > 0) {
      this.generated = [];
      this.checkSeqLen(); // a prompt already over the limit never migrates
    }
  }

  /** Sends the request until a worker answers 200 (retrying and migrating as allowed); throws RunFailed. */
  async open(): Promise<void> {
    for (;;) {
      const failed = await this.tryAttempt();
      if (failed === undefined) return;
      this.recover(failed);
      if (this.done) return;
    }
  }

  /**
   * The next lines of the answer over every attempt (token lines; the last call before undefined
   * ends with the summary); throws RunFailed when a failure cannot be recovered from.
   */
  async read(): Promise<GenerateLine[] | undefined> {
    for (;;) {
      if (this.pending !== undefined) {
        const failed = this.pending;
        this.pending = undefined;
        this.attempt?.end();
        this.recover(failed);
        if (!this.done) await this.open();
        continue;
      }
      if (this.done) return this.finalLines();
      const a = this.attempt!;
      let chunk: Uint8Array | undefined;
      try {
        chunk = await a.reply!.read();
      } catch (err) {
        this.pending = attemptFailure(a.ctrl, err, a.workerId, true);
        continue;
      }
      const out: GenerateLine[] = [];
      const ended = chunk === undefined;
      for (const line of ended ? a.lines.end() : a.lines.push(chunk!)) {
        if (this.done || this.pending !== undefined) break;
        this.take(a, line, out);
      }
      if (ended && !this.done && this.pending === undefined) this.pending = unfinishedStream(a.workerId, false);
      if (out.length > 0) return out;
    }
  }

  /** The client went away: the current attempt is cancelled and nothing is tried again. */
  cancel(): void {
    this.clientGone = true;
    const a = this.attempt;
    if (a === undefined) return;
    a.ctrl.abort(new ClientGone());
    a.reply?.cancel();
    a.end();
  }

  /** The request is over, any way: the current attempt's load is released (idempotent). */
  close(): void {
    this.attempt?.end();
  }

  /** One line of the current attempt: a token goes out (and is tracked), the summary ends the run. */
  private take(a: Attempt, line: GenerateLine, out: GenerateLine[]): void {
    if (!a.heardBack) {
      // The worker's prefill is over at its first line (blank heartbeat lines before it are not lines).
      a.heardBack = true;
      this.deps.state.firstToken(a.plan);
    }
    if ("token_id" in line) {
      this.completionTokens++;
      if (this.generated !== undefined) {
        this.generated.push(line.token_id);
        this.checkSeqLen();
      }
      out.push(line);
      return;
    }
    if (line.finish_reason !== "length" && !this.clientGone) {
      this.pending = unfinishedStream(a.workerId, true);
      return;
    }
    a.end();
    this.deps.state.reportSuccess(a.workerId);
    this.done = true;
    out.push(this.summary(line));
  }

  /** Stops tracking once prompt + generated tokens exceed --migration-max-seq-len (Dynamo's rule: strictly above). */
  private checkSeqLen(): void {
    const max = this.deps.policy.migrationMaxSeqLen;
    if (max === undefined || this.generated === undefined || this.req.prompt.length + this.generated.length <= max) return;
    this.generated = undefined;
    this.migrationsLeft = 0;
    this.deps.metrics.migrationMaxSeqLenExceeded(this.req.model);
  }

  /** The summary the client sees: the original prompt and every token sent, whichever worker sent it. */
  private summary(last: GenerateSummary): GenerateSummary {
    const promptTokens = this.req.prompt.length;
    return { ...last, prompt_tokens: promptTokens, completion_tokens: this.completionTokens, cached_tokens: Math.min(last.cached_tokens, promptTokens) };
  }

  /** After a migration found max_tokens already sent: the run ends without another attempt. */
  private finalLines(): GenerateLine[] | undefined {
    if (this.attempt !== undefined || this.completionTokens < this.req.maxTokens || this.finalSent) return undefined;
    this.finalSent = true;
    return [this.summary({ finish_reason: "length", prompt_tokens: 0, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 0 })];
  }

  /** One attempt on this.plan: undefined once it answered 200, else why it failed. */
  private async tryAttempt(): Promise<AttemptFailure | undefined> {
    const { state, callWorker, stalls } = this.deps;
    const plan = this.plan;
    const a = new Attempt(plan, state, stalls);
    this.attempt = a;
    this.tried.add(a.workerId);
    const n = this.attempts++;
    const body: GenerateBody = {
      worker: plan.worker.record.worker_index,
      dp_rank: plan.dpRank,
      token_ids: n === 0 || this.completionTokens === 0 ? this.req.prompt : [...this.req.prompt, ...this.generated!],
      max_tokens: this.req.maxTokens - this.completionTokens,
      // Each attempt its own id: an earlier one may still be winding down in the same mocker process.
      request_id: n === 0 ? this.req.requestId : `${this.req.requestId}-${n}`,
    };
    if (plan.kvHint) body.kv_hint = plan.kvHint;
    // The prefill reply's params hold for the prompt alone: a resumption past sent tokens computes it.
    const leg = this.completionTokens === 0 ? this.req.leg : undefined;
    if (leg?.kvTransferParams) body.kv_transfer_params = leg.kvTransferParams;
    if (plan.loraName !== undefined) body.lora_name = plan.loraName;
    if (this.clientGone) a.ctrl.abort(new ClientGone());
    let reply: WorkerReply;
    try {
      reply = await callWorker(plan.worker.record.request_url, JSON.stringify(body), a.ctrl, a.stall, leg?.headers);
    } catch (err) {
      a.end();
      return attemptFailure(a.ctrl, err, a.workerId, false);
    }
    if (reply.status === 200) {
      a.reply = reply;
      return undefined;
    }
    const text = await readAll(reply).then((b) => DECODER.decode(b), () => "");
    a.end();
    return answerAttemptFailure(a.workerId, reply.status, text);
  }

  /**
   * After a failed attempt: reports it (the worker may leave routing), then routes the next attempt
   * (this.plan) when a retry or migration is left, or throws RunFailed with the attempt's error.
   */
  private recover(f: AttemptFailure): void {
    const a = this.attempt!;
    const { state, metrics, logger } = this.deps;
    if (f.kind === "client" || this.clientGone || this.deps.closing?.()) throw new RunFailed(f.failure);
    if (f.kind === "unsent" || f.kind === "lost" || f.kind === "shutdown") state.reportFailure(a.workerId, true);
    else if (f.kind === "stalled" && this.deps.stallProbe) void this.deps.stallProbe.stalled(a.plan.worker);
    else if (f.kind === "stalled" || f.kind === "error" || f.kind === "busy") state.reportFailure(a.workerId, false);
    else if (f.kind === "refused") state.reportSuccess(a.workerId); // alive and answering: the request was at fault
    let how: "retry" | "new_request" | "ongoing_request";
    if ((f.kind === "unsent" || f.kind === "busy") && this.retriesLeft > 0) {
      this.retriesLeft--;
      how = "retry";
    } else if (f.kind !== "refused" && f.kind !== "error" && this.migrationsLeft > 0 && this.generated !== undefined) {
      this.migrationsLeft--;
      how = a.reply === undefined ? "new_request" : "ongoing_request";
    } else throw new RunFailed(f.failure);
    this.attempt = undefined;
    if (this.completionTokens >= this.req.maxTokens) {
      this.done = true; // every token was out, only the summary was lost: nothing is sent again
      return;
    }
    const prompt = this.completionTokens === 0 ? this.req.prompt : [...this.req.prompt, ...this.generated!];
    const next = state.route(this.req.model, prompt, this.tried, this.completionTokens === 0 ? this.req.leg?.route : undefined);
    if ("status" in next) throw new RunFailed(f.failure);
    // Counted once another attempt is really on its way.
    if (how === "retry") metrics.retries++;
    else metrics.migration(this.req.model, how);
    logger?.warn(`${this.req.requestId}: ${f.failure.body.error.message}; ${how === "retry" ? "retried" : "migrated"} on worker ${next.worker.id}${this.completionTokens > 0 ? ` after ${this.completionTokens} token(s)` : ""}`);
    this.plan = next;
  }
}
