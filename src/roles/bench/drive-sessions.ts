// Drives a session workload at a server on the wall clock: a session's first turn as the arrival
// spec says, each later turn `delay` after the previous turn of its session finished (the same
// core schedule replay runs on its virtual clock), --max-sessions open at once. A turn that
// extends its predecessor is sent as the predecessor's prompt + what it generated (its text, in
// the built-in tokenizer's ids) + its own segment. A failed turn's later turns are recorded as
// failed, never sent.
import { createRng } from "../../core/random/rng.ts";
import { SessionRun } from "../../core/replay/session-run.ts";
import { tokenize } from "../../core/text/tokenizer.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { LoadDeps, LoadPlan, LoadResult, TimedRecord } from "./drive-load.ts";
import type { RequestRecord } from "./send-request.ts";

export async function driveSessions(plan: LoadPlan, deps: LoadDeps): Promise<LoadResult> {
  const workload = plan.workload;
  const n = workload.length;
  const warmup = await warmFirstTurns(plan, deps);
  const run = new SessionRun(workload, plan.arrival, createRng(plan.seed), plan.maxSessions);
  const records: TimedRecord[] = [];
  let inFlight = 0;
  let cutShort = false;
  const startMs = deps.now();
  deps.onStart?.(startMs);
  const expired = () => deps.stop?.aborted === true || (plan.durationMs !== undefined && deps.now() - startMs >= plan.durationMs);
  // A finish can make a turn due sooner than the one being waited for: every wait also ends on one.
  let finishedSignal: () => void = () => {};
  let finishedOne = new Promise<void>((resolve) => (finishedSignal = resolve));
  const stopped = new Promise<void>((resolve) => (deps.stop?.aborted ? resolve() : deps.stop?.addEventListener("abort", () => resolve(), { once: true })));
  const push = (rec: RequestRecord, index: number, inFlightAtSend: number) => {
    const link = workload[index]!.session!;
    records.push({ ...rec, index, inFlightAtSend, session: { session: link.session, turn: link.turn } });
    deps.onProgress?.(records.length, n);
  };

  const sendTurn = async (i: number) => {
    const tokens = new Uint32Array(run.promptLength(i));
    run.writePrompt(i, tokens);
    const req: WorkloadRequest = { ...workload[i]!, inputLength: tokens.length, writeTokens: (out) => out.set(tokens) };
    inFlight++;
    const atSend = inFlight;
    const rec = await deps.send(req, deps.stop);
    inFlight--;
    const endMs = deps.now() - startMs;
    push(rec, i, atSend);
    const generated = rec.ok && rec.text !== undefined ? Uint32Array.from(tokenize(rec.text)) : undefined;
    const carried = generated ? concat(tokens, generated) : tokens;
    for (const c of run.finished(i, endMs, rec.ok, carried)) {
      const t = deps.now();
      push({ ok: false, errorKind: "session_failed", error: c.reason, sentMs: t, ttftMs: NaN, itlMs: [], e2elMs: 0, promptTokens: 0, outputTokens: 0 }, c.index, inFlight);
    }
    finishedSignal();
    finishedOne = new Promise<void>((resolve) => (finishedSignal = resolve));
  };

  const running = new Set<Promise<void>>();
  for (;;) {
    const due = run.peekMs();
    if (due === Infinity) {
      if (running.size === 0) break;
      await Promise.race([finishedOne, stopped]);
      if (deps.stop?.aborted) {
        cutShort = true;
        break;
      }
      continue;
    }
    const wait = startMs + due - deps.now();
    if (wait > 0) {
      await Promise.race([deps.sleep(wait), finishedOne, stopped]);
      if (!deps.stop?.aborted) continue;
    }
    if (expired() || (plan.durationMs !== undefined && due >= plan.durationMs)) {
      cutShort = true;
      break;
    }
    const i = run.pop();
    const p = sendTurn(i).finally(() => running.delete(p));
    running.add(p);
  }
  await Promise.all(running);
  return { records, startMs, endMs: deps.now(), warmup, cutShort };
}

function concat(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Warm-up sends the first few sessions' first turns (a later turn's prompt needs its session run). */
async function warmFirstTurns(plan: LoadPlan, deps: LoadDeps): Promise<{ sent: number; failed: number }> {
  const firsts = plan.workload.filter((r) => r.session!.previous < 0 && !r.session!.extendsPrevious).slice(0, plan.warmupRequests);
  const results = await Promise.all(firsts.map((r) => deps.send(r, deps.stop)));
  return { sent: firsts.length, failed: results.filter((r) => !r.ok).length };
}
