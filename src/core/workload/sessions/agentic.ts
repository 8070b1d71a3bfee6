// The synthetic agentic workload: sessions of N turns. Turn 1 is one of the shared system prompts
// (--num-prefixes of --prefix-tokens) plus the session's own task (--suffix-tokens); each later
// turn is the previous prompt + the tokens that turn actually generated + a new tool output
// (--tool-tokens), sent after an exponential think time (mean --think-time-ms). Seeded.
import { createRng } from "../../random/rng.ts";
import { randomPrefixes, writeSeededTokens, type SharedPrefixOptions } from "../synthetic.ts";
import type { WorkloadRequest } from "../workload.ts";

/** Turn 1 is drawn as the shared-prefix workload draws a request (its options but the request count). */
export interface AgenticOptions extends Omit<SharedPrefixOptions, "requests"> {
  sessions: number;
  turns: number;
  toolTokens: number;
  thinkTimeMs: number;
}

/** Session-major: every turn of session 0, then of session 1, … (a predecessor always first). */
export function agenticWorkload(o: AgenticOptions): WorkloadRequest[] {
  const vocab = o.vocabSize ?? 32_000;
  const rng = createRng(o.seed);
  const prefixes = randomPrefixes(rng, o.numPrefixes, o.prefixTokens, vocab);
  const segment = (seed: number, out: Uint32Array, from: number, count: number) => writeSeededTokens(seed, vocab, out, from, count);
  const out: WorkloadRequest[] = [];
  for (let s = 0; s < o.sessions; s++) {
    const prefix = prefixes[rng.int(o.numPrefixes)]!;
    const taskSeed = rng.nextU32();
    out.push({
      timestampMs: 0,
      inputLength: o.prefixTokens + o.suffixTokens,
      outputLength: o.outputTokens,
      writeTokens: (t) => {
        t.set(prefix);
        segment(taskSeed, t, o.prefixTokens, o.suffixTokens);
      },
      session: { session: s, turn: 1, previous: -1, delayMs: 0 },
    });
    for (let k = 2; k <= o.turns; k++) {
      const toolSeed = rng.nextU32();
      const delayMs = o.thinkTimeMs > 0 ? -Math.log(1 - rng.next()) * o.thinkTimeMs : 0;
      out.push({
        timestampMs: 0,
        inputLength: o.toolTokens,
        outputLength: o.outputTokens,
        writeTokens: (t) => segment(toolSeed, t, 0, o.toolTokens),
        session: { session: s, turn: k, previous: out.length - 1, delayMs, extendsPrevious: true },
      });
    }
  }
  return out;
}

/** Problems with the agentic options, one line each (flag spellings). */
export function agenticProblems(o: AgenticOptions): string[] {
  const p: string[] = [];
  if (!(o.numPrefixes >= 1)) p.push(`--num-prefixes: got ${o.numPrefixes}, expected an integer ≥ 1`);
  if (!(o.prefixTokens + o.suffixTokens >= 1)) p.push("--prefix-tokens + --suffix-tokens: a first turn needs at least 1 token");
  return p;
}
