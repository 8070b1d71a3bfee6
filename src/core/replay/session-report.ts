// The session part of a report (replay and bench alike): per turn index, how many turns ran, their
// prefix-cache reuse and TTFT (reuse should rise with the turn index where routing keeps a
// session's history); per session, the time from its first turn's send to its last turn's finish.
import { percentile } from "./stats.ts";

/** One turn as measured; times in ms on one clock. */
export interface TurnOutcome {
  session: number;
  turn: number;
  ok: boolean;
  sentMs: number;
  ttftMs: number;
  finishMs: number;
  promptTokens: number;
  /** NaN when the server did not say. */
  cachedTokens: number;
}

export interface TurnIndexFigures {
  turn: number;
  completed: number;
  failed: number;
  mean_prompt_tokens: number;
  /** Cached over prompt tokens of the completed turns that reported a cache figure; null when none did. */
  prefix_cache_reuse_ratio: number | null;
  mean_ttft_ms: number;
  p90_ttft_ms: number;
}

export interface SessionFigures {
  sessions: number;
  /** Sessions whose every turn completed (their times below). */
  completed_sessions: number;
  mean_turns_per_session: number;
  mean_session_time_s: number;
  median_session_time_s: number;
  p90_session_time_s: number;
  p99_session_time_s: number;
  per_turn: TurnIndexFigures[];
}

export function sessionFigures(turns: readonly TurnOutcome[]): SessionFigures {
  const byTurn = new Map<number, TurnOutcome[]>();
  const bySession = new Map<number, { first: number; last: number; ok: boolean; turns: number }>();
  for (const t of turns) {
    let list = byTurn.get(t.turn);
    if (list === undefined) byTurn.set(t.turn, (list = []));
    list.push(t);
    const s = bySession.get(t.session) ?? { first: Infinity, last: -Infinity, ok: true, turns: 0 };
    s.turns++;
    s.ok &&= t.ok;
    if (t.ok) {
      s.first = Math.min(s.first, t.sentMs);
      s.last = Math.max(s.last, t.finishMs);
    }
    bySession.set(t.session, s);
  }
  const per_turn = [...byTurn.keys()].sort((a, b) => a - b).map((turn) => turnFigures(turn, byTurn.get(turn)!));
  const times = Float64Array.from([...bySession.values()].filter((s) => s.ok && s.turns > 0).map((s) => (s.last - s.first) / 1000));
  const mean = times.length > 0 ? times.reduce((a, b) => a + b, 0) / times.length : 0;
  return {
    sessions: bySession.size,
    completed_sessions: times.length,
    mean_turns_per_session: bySession.size > 0 ? turns.length / bySession.size : 0,
    mean_session_time_s: mean,
    median_session_time_s: percentile(times, 50),
    p90_session_time_s: percentile(times, 90),
    p99_session_time_s: percentile(times, 99),
    per_turn,
  };
}

function turnFigures(turn: number, list: readonly TurnOutcome[]): TurnIndexFigures {
  const ok = list.filter((t) => t.ok);
  const known = ok.filter((t) => !Number.isNaN(t.cachedTokens));
  const prompt = known.reduce((a, t) => a + t.promptTokens, 0);
  const ttft = Float64Array.from(ok.map((t) => t.ttftMs));
  return {
    turn,
    completed: ok.length,
    failed: list.length - ok.length,
    mean_prompt_tokens: ok.length > 0 ? ok.reduce((a, t) => a + t.promptTokens, 0) / ok.length : 0,
    prefix_cache_reuse_ratio: known.length > 0 && prompt > 0 ? known.reduce((a, t) => a + t.cachedTokens, 0) / prompt : null,
    mean_ttft_ms: ttft.length > 0 ? ttft.reduce((a, b) => a + b, 0) / ttft.length : 0,
    p90_ttft_ms: percentile(ttft, 90),
  };
}
