// Step times read off a timing profile's tables: bilinear between grid points. Below an axis's
// first point the first point's time holds (the smallest measured pass is the floor); above its
// last point the query is refused, or with extrapolation the last segment's slope continues and a
// warning is given once per axis (docs/timing.md).
import type { TablesProfile } from "../../protocol/timing-profile.ts";
import type { StepShape, StepTimer } from "./step-timer.ts";

/** A step asked a profile for a time past its tables (and extrapolation is off). */
export class ProfileRangeError extends RangeError {
  override readonly name = "ProfileRangeError";
}

export interface ProfileTimerOptions {
  extrapolate: boolean;
  /** Told once per axis the first time a query passes its last point (extrapolate on); `key` names the profile and axis. */
  warn?: (message: string, key: string) => void;
}

/** Where x falls on an axis: the lower grid index and the weight of the next point. */
interface Position {
  i: number;
  w: number;
}

export class ProfileTimer implements StepTimer {
  readonly requestMs = 0;
  private readonly warned = new Set<string>();
  private readonly pos0: Position = { i: 0, w: 0 };
  private readonly pos1: Position = { i: 0, w: 0 };
  private readonly decodeX: number[];
  private readonly decodeXName: string;

  constructor(private readonly profile: TablesProfile, private readonly opts: ProfileTimerOptions) {
    const d = profile.decode;
    this.decodeX = d.x === "batch" ? d.batch : d.activeKvTokens;
    this.decodeXName = `decode.${d.x}`;
  }

  /**
   * Why a request of `promptLen` tokens and `maxTokens` output tokens would ask past the tables'
   * contexts, or undefined when it fits (or extrapolation is on): the engine refuses it at admission
   * rather than fail a step. A single-column context axis holds for every context.
   */
  contextRefusal(promptLen: number, maxTokens: number): string | undefined {
    if (this.opts.extrapolate) return undefined;
    const p = this.profile;
    const lastPrefill = p.prefill.context.length > 1 ? p.prefill.context[p.prefill.context.length - 1]! : Infinity;
    const lastDecode = p.decode.context.length > 1 ? p.decode.context[p.decode.context.length - 1]! : Infinity;
    if (promptLen - 1 > lastPrefill) return `prompt (${promptLen}) is past timing profile ${p.name}'s prefill.context (last ${lastPrefill}); give --timing-extrapolate to extrapolate`;
    if (promptLen + maxTokens - 1 > lastDecode) return `prompt (${promptLen}) + max tokens (${maxTokens}) are past timing profile ${p.name}'s decode.context (last ${lastDecode}); give --timing-extrapolate to extrapolate`;
    return undefined;
  }

  /**
   * A step's prefill: the prefill table at the sum of its new tokens and their mean context (a
   * prefill's first token is part of its pass, as in the measured forward passes).
   */
  prefillPartMs(s: StepShape): number {
    return s.prefillTokens > 0 ? this.prefillMs(s.prefillTokens, s.prefillContextTokenProduct / s.prefillTokens) : 0;
  }

  /** A step's decode: the decode table for its decoding requests, at least 1 ms as in Dynamo's mocker (which adds the two parts). */
  decodePartMs(s: StepShape): number {
    return s.decodeRequests > 0 ? Math.max(1, this.decodeMs(s.decodeRequests, s.decodeContextTokens)) : 0;
  }

  /** One step prefilling `tokens` new tokens after `context` computed ones (0 when none). */
  prefillMs(tokens: number, context: number): number {
    if (tokens <= 0) return 0;
    const t = this.profile.prefill;
    return this.lookup(t.ms, t.tokens, "prefill.tokens", tokens, t.context, "prefill.context", context);
  }

  /** One decode step of `batch` requests whose contexts sum to `contextTokens` (0 when none). */
  decodeMs(batch: number, contextTokens: number): number {
    if (batch <= 0) return 0;
    const d = this.profile.decode;
    const x = d.x === "batch" ? batch : contextTokens;
    return this.lookup(d.ms, this.decodeX, this.decodeXName, x, d.context, "decode.context", contextTokens / batch);
  }

  private lookup(ms: number[][], xs: number[], xName: string, x: number, ys: number[], yName: string, y: number): number {
    const a = this.place(xs, xName, x, this.pos0);
    const b = this.place(ys, yName, y, this.pos1);
    const r0 = ms[a.i]!;
    const r1 = a.w === 0 ? r0 : ms[a.i + 1]!;
    const at = (row: number[]) => (b.w === 0 ? row[b.i]! : row[b.i]! + (row[b.i + 1]! - row[b.i]!) * b.w);
    const v0 = at(r0);
    const v = a.w === 0 ? v0 : v0 + (at(r1) - v0) * a.w;
    return v > 0 ? v : 0;
  }

  private place(axis: number[], name: string, x: number, out: Position): Position {
    const n = axis.length;
    if (n === 1 || x <= axis[0]!) {
      out.i = 0;
      out.w = 0;
      return out;
    }
    const last = axis[n - 1]!;
    if (x > last) {
      if (!this.opts.extrapolate) {
        throw new ProfileRangeError(`timing profile ${this.profile.name}: ${name} ${round(x)} is past the profile's last point ${last}; give a profile that covers it, or --timing-extrapolate`);
      }
      if (!this.warned.has(name)) {
        this.warned.add(name);
        this.opts.warn?.(`timing profile ${this.profile.name}: ${name} ${round(x)} is past the profile's last point ${last}; extrapolating linearly from its last two points`, `${this.profile.name} ${name}`);
      }
      out.i = n - 2;
      out.w = (x - axis[n - 2]!) / (last - axis[n - 2]!);
      return out;
    }
    let i = 0;
    while (axis[i + 1]! < x) i++;
    out.i = i;
    out.w = (x - axis[i]!) / (axis[i + 1]! - axis[i]!);
    return out;
  }
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
