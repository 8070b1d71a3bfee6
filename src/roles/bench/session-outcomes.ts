// A bench run's session turns as report outcomes (core/replay/session-report.ts): send and
// finish on the run's clock; a turn never sent (its session failed) counts as a failed turn.
import { sessionFigures, type SessionFigures } from "../../core/replay/session-report.ts";
import type { TimedRecord } from "./drive-load.ts";

/** The session figures of a run's records; undefined when no record is a session turn. */
export function sessionFiguresOfRecords(records: readonly TimedRecord[]): SessionFigures | undefined {
  if (!records.some((r) => r.session !== undefined)) return undefined;
  return sessionFigures(
    records
      .filter((r) => r.session !== undefined && r.errorKind !== "aborted")
      .map((r) => ({ session: r.session!.session, turn: r.session!.turn, ok: r.ok, sentMs: r.sentMs, ttftMs: r.ttftMs, finishMs: r.sentMs + r.e2elMs, promptTokens: r.promptTokens, cachedTokens: r.cachedTokens ?? NaN })),
  );
}
