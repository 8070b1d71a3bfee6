// Prompts that grow turn by turn: a turn that extends its predecessor is sent as the predecessor's
// prompt, the tokens it actually generated and its own new segment. The predecessor's tokens are
// kept from its finish until every turn extending it was built, no longer.
import type { WorkloadRequest } from "../workload/workload.ts";

export class CarriedPrompts {
  private readonly carried = new Map<number, Uint32Array>();
  /** Per request: turns extending it not yet built. */
  private readonly waiting: Int32Array;

  constructor(private readonly workload: readonly WorkloadRequest[]) {
    this.waiting = new Int32Array(workload.length);
    for (const r of workload) if (r.session?.extendsPrevious && r.session.previous >= 0) this.waiting[r.session.previous]!++;
  }

  /** Turn i finished with these tokens (prompt then generated): kept if a later turn extends it. */
  keep(i: number, promptAndOutput: Uint32Array): void {
    if (this.waiting[i]! > 0) this.carried.set(i, promptAndOutput.slice());
  }

  /** Turn i's whole prompt length (its own inputLength unless it extends a kept turn). */
  inputLength(i: number): number {
    const r = this.workload[i]!;
    const base = r.session?.extendsPrevious ? this.carried.get(r.session.previous) : undefined;
    return (base?.length ?? 0) + r.inputLength;
  }

  /** Writes turn i's whole prompt into out[0, inputLength(i)). */
  write(i: number, out: Uint32Array): void {
    const r = this.workload[i]!;
    const prev = r.session?.extendsPrevious ? r.session.previous : -1;
    const base = prev >= 0 ? this.carried.get(prev) : undefined;
    if (base === undefined) {
      r.writeTokens(out);
      return;
    }
    out.set(base);
    r.writeTokens(out.subarray(base.length));
    if (--this.waiting[prev]! === 0) this.carried.delete(prev);
  }

  /** Turns of a failed predecessor are never built: forget what they would have read. */
  forget(i: number): void {
    this.carried.delete(i);
  }

  /** Tokens held right now (for tests: a finished session holds none). */
  get held(): number {
    let n = 0;
    for (const t of this.carried.values()) n += t.length;
    return n;
  }
}
