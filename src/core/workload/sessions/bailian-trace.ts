// Alibaba's bailian trace (the Qwen serving traces): `chat_id`, `parent_chat_id` (−1 = a new
// conversation), `timestamp` in seconds, `input_length`, `output_length`, `turn` (1-based) and
// `hash_ids` of 16-token blocks, whatever --trace-block-size says. A chat waits for its parent and
// is sent the timestamp difference after the parent finished; a conversation is the tree under a
// root chat.
import { expandHashIds } from "../mooncake-trace.ts";
import { assembleSessions, type DraftTurn, type SessionLineError, type SessionTrace } from "./assemble.ts";
import { hashIdsField, idField, numberField, objectRows } from "./row-fields.ts";

/** Tokens per bailian hash id (the traces' published block size). */
export const BAILIAN_BLOCK_SIZE = 16;

export function parseBailianTrace(text: string): SessionTrace {
  const drafts: DraftTurn[] = [];
  const errors: SessionLineError[] = [];
  /** chat id → draft index; chat ids of bad rows → their line (their children are bad too). */
  const chats = new Map<string, number>();
  const badChats = new Map<string, number>();
  /** Children whose parent was not seen before them: checked once the whole file is read. */
  const orphans: { line: number; parent: string; key: string }[] = [];
  const read = { lines: 0 };
  for (const { line, o } of objectRows(text, errors, read)) {
    const chat = idField(o, "chat_id");
    const parent = numberField(o, ["parent_chat_id"], true, -1);
    if (chat.error || chat.value === undefined) {
      errors.push({ line, message: chat.error ?? "chat_id: missing" });
      continue;
    }
    if (parent.error || parent.value === undefined) {
      errors.push({ line, message: parent.error ?? "parent_chat_id: missing (−1 for a first turn)", key: `chat:${chat.value}` });
      badChats.set(chat.value, line);
      continue;
    }
    const parentId = parent.value === -1 ? undefined : String(parent.value);
    const parentDraft = parentId !== undefined ? chats.get(parentId) : undefined;
    // A chat belongs to its root's conversation; an unknown parent leaves it on its own key.
    const key = parentDraft !== undefined ? drafts[parentDraft]!.key : parentId !== undefined && badChats.has(parentId) ? `chat:${parentId}` : `chat:${chat.value}`;
    const fail = (message: string) => {
      errors.push({ line, message, key });
      badChats.set(chat.value!, line);
    };
    if (chats.has(chat.value) || badChats.has(chat.value)) {
      const first = chats.has(chat.value) ? drafts[chats.get(chat.value)!]!.line : badChats.get(chat.value)!;
      errors.push({ line, message: `chat_id: ${chat.value} again (first at line ${first})`, key: drafts[chats.get(chat.value) ?? -1]?.key ?? key });
      continue;
    }
    if (parentId !== undefined && badChats.has(parentId)) {
      fail(`parent_chat_id: ${parentId} is a bad line (line ${badChats.get(parentId)})`);
      continue;
    }
    const ts = numberField(o, ["timestamp"]);
    const turn = numberField(o, ["turn"], true, 1);
    const input = numberField(o, ["input_length"], true, 1);
    const output = numberField(o, ["output_length"], true, 1);
    const fieldError = [ts, turn, input, output].find((f) => f.error)?.error;
    if (fieldError) {
      fail(fieldError);
      continue;
    }
    const missing = (["timestamp", "turn", "input_length", "output_length"] as const).filter((_, k) => [ts, turn, input, output][k]!.value === undefined);
    if (missing.length > 0) {
      fail(`missing field${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
      continue;
    }
    const ids = hashIdsField(o, input.value!, BAILIAN_BLOCK_SIZE, `the bailian block size of ${BAILIAN_BLOCK_SIZE} tokens`);
    if (ids.error) {
      fail(ids.error);
      continue;
    }
    const timestampMs = ts.value! * 1000;
    let delayMs = 0;
    if (parentId === undefined) {
      if (turn.value !== 1) {
        fail(`turn: ${turn.value} with parent_chat_id −1: a later turn with no earlier turn`);
        continue;
      }
    } else if (parentDraft === undefined) {
      orphans.push({ line, parent: parentId, key });
      badChats.set(chat.value, line);
      continue;
    } else {
      const p = drafts[parentDraft]!;
      if (turn.value !== p.turn + 1) {
        fail(`turn: ${turn.value} after its parent chat ${parentId}'s turn ${p.turn} (line ${p.line}); expected ${p.turn + 1}`);
        continue;
      }
      if (timestampMs < p.timestampMs) {
        fail(`timestamp: ${ts.value} s is before its parent chat ${parentId}'s ${p.timestampMs / 1000} s (line ${p.line})`);
        continue;
      }
      delayMs = timestampMs - p.timestampMs;
    }
    const hashIds = ids.value!;
    const inputLength = input.value!;
    chats.set(chat.value, drafts.length);
    drafts.push({
      line,
      key,
      previous: parentDraft ?? -1,
      turn: turn.value!,
      delayMs,
      timestampMs,
      inputLength,
      outputLength: output.value!,
      writeTokens: (out) => expandHashIds(hashIds, inputLength, BAILIAN_BLOCK_SIZE, out),
    });
  }
  for (const o of orphans) {
    const later = chats.get(o.parent);
    const where = later !== undefined ? `appears only later, at line ${drafts[later]!.line}` : badChats.has(o.parent) ? `is a bad line (line ${badChats.get(o.parent)})` : "never appears";
    errors.push({ line: o.line, message: `parent_chat_id: ${o.parent} ${where}`, key: o.key });
  }
  errors.sort((a, b) => a.line - b.line);
  return assembleSessions(drafts, errors, read.lines);
}
