// The turns a session-trace parser read, checked and numbered into workload requests: a session
// with a bad line is reported (line and field) and, when the caller skips bad lines, dropped whole,
// because its later turns would otherwise hang on a turn that is not there.
import type { WorkloadRequest } from "../workload.ts";

export interface DraftTurn {
  line: number;
  /** Session key, unique per session in the file. */
  key: string;
  /** Index in the drafts of the turn this one waits for; -1 for a first turn. */
  previous: number;
  turn: number;
  delayMs: number;
  /** A first turn's start; a later turn's own trace time (reports only). */
  timestampMs: number;
  inputLength: number;
  outputLength: number;
  writeTokens(out: Uint32Array): void;
  extendsPrevious?: boolean;
  /** The turn's LoRA adapter (a row's `lora_name`); absent = the base model. */
  loraName?: string;
}

export interface SessionLineError {
  line: number;
  message: string;
  /** The session the bad line belongs to, when it could be told. */
  key?: string;
}

export interface SessionTrace {
  requests: WorkloadRequest[];
  errors: SessionLineError[];
  /** Non-empty lines read. */
  lines: number;
  sessions: number;
  /** Sessions left out because one of their lines was bad (turns they held). */
  dropped: { sessions: number; turns: number };
}

/** Numbers the good sessions' turns in draft order (a predecessor always comes first). */
export function assembleSessions(drafts: readonly DraftTurn[], errors: SessionLineError[], lines: number): SessionTrace {
  const bad = new Set<string>();
  for (const e of errors) if (e.key !== undefined) bad.add(e.key);
  const indexOf = new Int32Array(drafts.length).fill(-1);
  const sessionOf = new Map<string, number>();
  const requests: WorkloadRequest[] = [];
  const droppedKeys = new Set<string>();
  let droppedTurns = 0;
  for (let d = 0; d < drafts.length; d++) {
    const t = drafts[d]!;
    if (bad.has(t.key)) {
      droppedKeys.add(t.key);
      droppedTurns++;
      continue;
    }
    let session = sessionOf.get(t.key);
    if (session === undefined) sessionOf.set(t.key, (session = sessionOf.size));
    indexOf[d] = requests.length;
    const previous = t.previous < 0 ? -1 : indexOf[t.previous]!;
    requests.push({
      timestampMs: t.timestampMs,
      inputLength: t.inputLength,
      outputLength: t.outputLength,
      writeTokens: t.writeTokens,
      ...(t.loraName !== undefined ? { loraName: t.loraName } : {}),
      session: { session, turn: t.turn, previous, delayMs: t.delayMs, ...(t.extendsPrevious ? { extendsPrevious: true } : {}) },
    });
  }
  return { requests, errors, lines, sessions: sessionOf.size, dropped: { sessions: droppedKeys.size, turns: droppedTurns } };
}
