// Mooncake rows with sessions, as Dynamo's mocker and aiperf's mooncake_trace read them:
// `session_id`, `timestamp` (alias `created_time`, ms), `delay` (alias `delay_ms`), `input_length`
// (alias `input_tokens`), `output_length` (alias `output_tokens`), `hash_ids`, `lora_name`. A session's turns
// are its rows in file order; the first starts at its timestamp, each later one is sent `delay`
// after the previous finished (else the timestamp difference); a row without session_id is a
// session of its own.
import { expandHashIds, loraNameProblem } from "../mooncake-trace.ts";
import { assembleSessions, type DraftTurn, type SessionLineError, type SessionTrace } from "./assemble.ts";
import { hashIdsField, idField, numberField, objectRows } from "./row-fields.ts";

/** True when any row names a session or a delay (else the rows are independent requests). */
export function hasSessionFields(text: string): boolean {
  return /"(session_id|delay|delay_ms)"\s*:/.test(text);
}

export function parseMooncakeSessions(text: string, traceBlockSize: number): SessionTrace {
  const drafts: DraftTurn[] = [];
  const errors: SessionLineError[] = [];
  /** Per session key: draft index of its last turn. */
  const last = new Map<string, number>();
  /** Sessions with a bad line so far: a later row of theirs is not a first turn (they are dropped whole). */
  const broken = new Set<string>();
  const read = { lines: 0 };
  for (const { line, o } of objectRows(text, errors, read)) {
    const id = idField(o, "session_id");
    const key = id.value !== undefined ? `s:${id.value}` : `line:${line}`;
    const fail = (message: string) => {
      errors.push({ line, message, key });
      broken.add(key);
    };
    if (id.error) {
      fail(id.error);
      continue;
    }
    const ts = numberField(o, ["timestamp", "created_time"]);
    const delay = numberField(o, ["delay", "delay_ms"]);
    const input = numberField(o, ["input_length", "input_tokens"], true, 1);
    const output = numberField(o, ["output_length", "output_tokens"], true, 1);
    const fieldError = [ts, delay, input, output].find((f) => f.error)?.error ?? loraNameProblem(o.lora_name);
    if (fieldError) {
      fail(fieldError);
      continue;
    }
    const missing = [input.value === undefined ? "input_length" : "", output.value === undefined ? "output_length" : ""].filter((m) => m !== "");
    if (missing.length > 0) {
      fail(`missing field${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
      continue;
    }
    const ids = hashIdsField(o, input.value!, traceBlockSize, `--trace-block-size ${traceBlockSize}`);
    if (ids.error) {
      fail(ids.error);
      continue;
    }
    const prev = last.get(key);
    const who = id.value !== undefined ? `session ${JSON.stringify(id.value)}` : "its own session";
    let delayMs = 0;
    let timestampMs: number;
    if (prev === undefined && broken.has(key)) {
      // A later turn of a session whose earlier turn was bad: kept only to be counted as dropped.
      timestampMs = ts.value ?? 0;
    } else if (prev === undefined) {
      if ((delay.value ?? 0) !== 0) {
        fail(`delay: ${delay.value} on the first turn of ${who} (a first turn starts at its timestamp; only later turns wait)`);
        continue;
      }
      if (ts.value === undefined) {
        fail(`timestamp: missing on the first turn of ${who}`);
        continue;
      }
      timestampMs = ts.value;
    } else {
      const before = drafts[prev]!;
      if (delay.value !== undefined) delayMs = delay.value;
      else if (ts.value === undefined) {
        fail(`delay: neither delay nor timestamp on turn ${before.turn + 1} of ${who}`);
        continue;
      } else if (ts.value < before.timestampMs) {
        fail(`timestamp: ${ts.value} is before turn ${before.turn}'s ${before.timestampMs} (line ${before.line}) of ${who}, and no delay is given`);
        continue;
      } else delayMs = ts.value - before.timestampMs;
      timestampMs = ts.value ?? before.timestampMs + delayMs;
    }
    const hashIds = ids.value!;
    const inputLength = input.value!;
    last.set(key, drafts.length);
    drafts.push({
      line,
      key,
      previous: prev ?? -1,
      turn: prev === undefined ? 1 : drafts[prev]!.turn + 1,
      delayMs,
      timestampMs,
      inputLength,
      outputLength: output.value!,
      writeTokens: (out) => expandHashIds(hashIds, inputLength, traceBlockSize, out),
      ...(typeof o.lora_name === "string" ? { loraName: o.lora_name } : {}),
    });
  }
  return assembleSessions(drafts, errors, read.lines);
}
