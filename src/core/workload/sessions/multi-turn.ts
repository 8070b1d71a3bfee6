// aiperf's multi_turn files: one session per line, `{session_id, turns: [{text | texts, delay |
// timestamp, output_length | max_tokens}]}`. Text turns are a chat: each later turn's prompt is the
// previous prompt, the tokens the previous turn generated and this turn's text (the built-in
// tokenizer's ids). The first turn starts at its timestamp (0 without one); a later one is sent
// `delay` ms after the previous finished (else the timestamp difference, else at once).
import { tokenize } from "../../text/tokenizer.ts";
import { assembleSessions, type DraftTurn, type SessionLineError, type SessionTrace } from "./assemble.ts";
import { idField, numberField, objectRows, type Row } from "./row-fields.ts";

export function parseMultiTurn(text: string, defaultOutputTokens: number): SessionTrace {
  const drafts: DraftTurn[] = [];
  const errors: SessionLineError[] = [];
  const seen = new Map<string, number>();
  const read = { lines: 0 };
  for (const { line, o } of objectRows(text, errors, read)) {
    const id = idField(o, "session_id");
    const key = `s:${id.value ?? `line:${line}`}`;
    const fail = (message: string) => void errors.push({ line, message, key });
    if (id.error) {
      fail(id.error);
      continue;
    }
    if (id.value !== undefined && seen.has(id.value)) {
      fail(`session_id: ${JSON.stringify(id.value)} again (first at line ${seen.get(id.value)}); a session is one line`);
      continue;
    }
    if (id.value !== undefined) seen.set(id.value, line);
    if (!Array.isArray(o.turns) || o.turns.length === 0) {
      fail(`turns must be a non-empty array, got ${JSON.stringify(o.turns)}`);
      continue;
    }
    const start = drafts.length;
    let ok = true;
    for (let k = 0; k < o.turns.length && ok; k++) {
      const t = o.turns[k] as unknown;
      const problem = (m: string) => {
        fail(`turns[${k}].${m}`);
        ok = false;
      };
      if (typeof t !== "object" || t === null || Array.isArray(t)) {
        fail(`turns[${k}] must be an object, got ${JSON.stringify(t)}`);
        break;
      }
      const turn = t as Row;
      const words = turnText(turn);
      if (typeof words !== "string") {
        problem(words.error);
        break;
      }
      const ts = numberField(turn, ["timestamp"]);
      const delay = numberField(turn, ["delay"]);
      const output = numberField(turn, ["output_length", "max_tokens"], true, 1);
      const fieldError = [ts, delay, output].find((f) => f.error)?.error;
      if (fieldError) {
        problem(fieldError);
        break;
      }
      const prev = k === 0 ? undefined : drafts[drafts.length - 1]!;
      let delayMs = 0;
      if (prev === undefined && (delay.value ?? 0) !== 0) {
        problem(`delay: ${delay.value} on the first turn (a first turn starts at its timestamp; only later turns wait)`);
        break;
      }
      if (prev !== undefined) {
        if (delay.value !== undefined) delayMs = delay.value;
        else if (ts.value !== undefined && ts.value < prev.timestampMs) {
          problem(`timestamp: ${ts.value} is before turn ${k}'s ${prev.timestampMs}, and no delay is given`);
          break;
        } else if (ts.value !== undefined) delayMs = ts.value - prev.timestampMs;
      }
      const tokens = Uint32Array.from(tokenize(words));
      if (tokens.length === 0 && k === 0) {
        problem("text: the first turn's text has no token");
        break;
      }
      drafts.push({
        line,
        key,
        previous: prev === undefined ? -1 : drafts.length - 1,
        turn: k + 1,
        delayMs,
        timestampMs: ts.value ?? (prev === undefined ? 0 : prev.timestampMs + delayMs),
        inputLength: tokens.length,
        outputLength: output.value ?? defaultOutputTokens,
        writeTokens: (out) => out.set(tokens),
        ...(k > 0 ? { extendsPrevious: true } : {}),
      });
    }
    if (!ok) drafts.length = start;
  }
  return assembleSessions(drafts, errors, read.lines);
}

/** A turn's text: `text`, or `texts` joined by newlines (aiperf's batched text). */
function turnText(t: Row): string | { error: string } {
  if (typeof t.text === "string") return t.text;
  if (Array.isArray(t.texts) && t.texts.every((x) => typeof x === "string")) return (t.texts as string[]).join("\n");
  if (t.text !== undefined) return { error: `text must be a string, got ${JSON.stringify(t.text)}` };
  return { error: "text: missing (a turn needs text or texts)" };
}
