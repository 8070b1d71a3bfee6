import { describe, expect, test } from "bun:test";
import { tokenize } from "../../text/tokenizer.ts";
import { detectTraceFormat, parseTrace } from "./parse-trace.ts";

const opts = { format: "auto" as const, traceBlockSize: 4, defaultOutputTokens: 7 };
const rows = (...o: object[]) => o.map((x) => JSON.stringify(x)).join("\n");
const links = (text: string) => parseTrace(text, opts).requests.map((r) => r.session);
const tokensOf = (r: { inputLength: number; writeTokens(o: Uint32Array): void }) => {
  const out = new Uint32Array(r.inputLength);
  r.writeTokens(out);
  return Array.from(out);
};

describe("format detection", () => {
  test("turns → multi_turn, chat_id → bailian_trace, else mooncake_trace (bad first lines are passed over)", () => {
    expect(detectTraceFormat(`oops\n${rows({ session_id: "a", turns: [] })}`)).toBe("multi_turn");
    expect(detectTraceFormat(rows({ chat_id: 1, parent_chat_id: -1 }))).toBe("bailian_trace");
    expect(detectTraceFormat(rows({ timestamp: 0, input_length: 1 }))).toBe("mooncake_trace");
  });

  test("plain Mooncake rows stay independent requests, as before sessions", () => {
    const p = parseTrace(rows({ timestamp: 0, input_length: 3, output_length: 2, hash_ids: [1] }), opts);
    expect(p.format).toBe("mooncake_trace");
    expect(p.requests[0]!.session).toBeUndefined();
    expect(p.sessions).toBeUndefined();
  });
});

describe("Mooncake rows with sessions (Dynamo's and aiperf's)", () => {
  test("a row's lora_name names its turn's adapter, as in a plain Mooncake trace; a bad one is its line's error", () => {
    const p = parseTrace(rows(
      { session_id: "a", timestamp: 0, input_length: 4, output_length: 2, hash_ids: [1], lora_name: "sql-lora" },
      { session_id: "a", delay: 5, input_length: 8, output_length: 2, hash_ids: [1, 2], lora_name: "sql-lora" },
      { session_id: "b", timestamp: 1, input_length: 4, output_length: 2, hash_ids: [3], lora_name: null },
      { session_id: "c", timestamp: 2, input_length: 4, output_length: 2, hash_ids: [3], lora_name: 7 },
    ), opts);
    expect(p.requests.map((r) => r.loraName)).toEqual(["sql-lora", "sql-lora", undefined]);
    expect(p.errors).toEqual([{ line: 4, key: "s:c", message: "lora_name must be a LoRA adapter's name (a non-empty string) or null, got 7" }]);
  });

  test("a session's rows are its turns in file order; delay, delay_ms or the timestamp gap; aliases; a row without session is its own", () => {
    const text = rows(
      { session_id: "a", timestamp: 100, input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: 7, created_time: 150, input_tokens: 8, output_tokens: 3, hash_ids: [9, 9] },
      { session_id: "a", delay: 500, input_length: 8, output_length: 2, hash_ids: [1, 2] },
      { timestamp: 120, input_length: 2, output_length: 1, hash_ids: [5] },
      { session_id: "a", timestamp: 2000, input_length: 12, output_length: 2, hash_ids: [1, 2, 3] },
      { session_id: 7, delay_ms: 10, input_length: 8, output_length: 1, hash_ids: [9, 9] },
    );
    const p = parseTrace(text, opts);
    expect(p.errors).toEqual([]);
    expect(p.sessions).toBe(3);
    expect(p.requests.map((r) => r.session)).toEqual([
      { session: 0, turn: 1, previous: -1, delayMs: 0 },
      { session: 1, turn: 1, previous: -1, delayMs: 0 },
      { session: 0, turn: 2, previous: 0, delayMs: 500 },
      { session: 2, turn: 1, previous: -1, delayMs: 0 },
      // No delay: the gap between its timestamp and the previous turn's (100 + 500 = 600 assumed for turn 2).
      { session: 0, turn: 3, previous: 2, delayMs: 1400 },
      { session: 1, turn: 2, previous: 1, delayMs: 10 },
    ]);
    expect(p.requests.map((r) => [r.timestampMs, r.inputLength, r.outputLength])).toEqual([[100, 4, 2], [150, 8, 3], [600, 8, 2], [120, 2, 1], [2000, 12, 2], [160, 8, 1]]);
    expect(tokensOf(p.requests[2]!)).toEqual([1, 1, 1, 1, 2, 2, 2, 2]);
  });

  test("bad input names the line and the field", () => {
    const text = rows(
      { session_id: "a", timestamp: 0, delay: 300, input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: "b", input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: "c", timestamp: 50, input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: "c", timestamp: 10, input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: "d", timestamp: 0, input_length: 40, output_length: 2, hash_ids: [1] },
    );
    expect(parseTrace(text, opts).errors.map((e) => `${e.line}: ${e.message}`)).toEqual([
      `1: delay: 300 on the first turn of session "a" (a first turn starts at its timestamp; only later turns wait)`,
      `2: timestamp: missing on the first turn of session "b"`,
      `4: timestamp: 10 is before turn 1's 50 (line 3) of session "c", and no delay is given`,
      "5: input_length 40 is longer than its 1 hash ids allow at --trace-block-size 4 (at most 4 tokens)",
    ]);
  });

  test("a bad line drops its whole session; other sessions keep their numbers dense", () => {
    const text = rows(
      { session_id: "a", timestamp: 0, input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: "b", timestamp: 0, input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: "a", delay: 5, input_length: 4, output_length: "x", hash_ids: [1] },
      { session_id: "a", delay: 5, input_length: 4, output_length: 2, hash_ids: [1] },
      { session_id: "b", delay: 5, input_length: 4, output_length: 2, hash_ids: [1] },
    );
    const p = parseTrace(text, opts);
    expect(p.errors.map((e) => e.line)).toEqual([3]);
    expect(p.dropped).toEqual({ sessions: 1, turns: 2 });
    expect(p.requests.map((r) => r.session)).toEqual([
      { session: 0, turn: 1, previous: -1, delayMs: 0 },
      { session: 0, turn: 2, previous: 0, delayMs: 5 },
    ]);
  });
});

describe("Alibaba's bailian trace", () => {
  const chat = (chat_id: number, parent_chat_id: number, timestamp: number, turn: number, input_length = 20, hash_ids = [1, 2]) => ({ chat_id, parent_chat_id, timestamp, input_length, output_length: 3, type: "text", turn, hash_ids });

  test("chats hang on their parents, seconds become ms, the gap is the delay, 16 tokens per hash id whatever --trace-block-size says", () => {
    const p = parseTrace(rows(chat(10, -1, 1.5, 1), chat(11, -1, 2, 1), chat(12, 10, 4, 2, 32)), opts);
    expect(p.format).toBe("bailian_trace");
    expect(p.errors).toEqual([]);
    expect(p.requests.map((r) => r.session)).toEqual([
      { session: 0, turn: 1, previous: -1, delayMs: 0 },
      { session: 1, turn: 1, previous: -1, delayMs: 0 },
      { session: 0, turn: 2, previous: 0, delayMs: 2500 },
    ]);
    const t = tokensOf(p.requests[2]!);
    expect(t.length).toBe(32);
    expect(t.slice(14, 18)).toEqual([1, 1, 2, 2]);
  });

  test("duplicate chat id, a parent that never appears or only later, a later turn with no earlier one: each named by line and field", () => {
    const text = rows(chat(1, -1, 0, 1), chat(1, -1, 1, 1), chat(2, 99, 2, 2), chat(3, 4, 3, 2), chat(4, -1, 4, 1), chat(5, -1, 5, 3), chat(6, 4, 6, 3));
    expect(parseTrace(text, opts).errors.map((e) => `${e.line}: ${e.message}`)).toEqual([
      "2: chat_id: 1 again (first at line 1)",
      "3: parent_chat_id: 99 never appears",
      "4: parent_chat_id: 4 appears only later, at line 5",
      "6: turn: 3 with parent_chat_id −1: a later turn with no earlier turn",
      "7: turn: 3 after its parent chat 4's turn 1 (line 5); expected 2",
    ]);
  });

  test("--skip-bad-lines semantics: the duplicate drops the first chat's conversation too, children of a bad chat go with it", () => {
    const p = parseTrace(rows(chat(1, -1, 0, 1), chat(2, 1, 1, 2), chat(1, -1, 1, 1), chat(3, -1, 2, 1), chat(4, 9, 3, 2), chat(5, 4, 4, 3)), opts);
    expect(p.errors.map((e) => e.line)).toEqual([3, 5, 6]);
    expect(p.requests.map((r) => r.session)).toEqual([{ session: 0, turn: 1, previous: -1, delayMs: 0 }]);
    // Chats 4 and 5 had no good turn to drop; chat 1's conversation had two.
    expect(p.dropped).toEqual({ sessions: 1, turns: 2 });
  });
});

describe("aiperf's multi_turn", () => {
  test("text turns extend the previous turn; delay or timestamp gap; output_length, max_tokens or the default", () => {
    const text = rows(
      { session_id: "s", turns: [{ text: "hello there", output_length: 4 }, { text: "and more", delay: 250, max_tokens: 2 }, { texts: ["x", "y"], timestamp: 900 }] },
      { session_id: "t", turns: [{ text: "solo", timestamp: 40 }] },
    );
    const p = parseTrace(text, opts);
    expect(p.format).toBe("multi_turn");
    expect(p.errors).toEqual([]);
    expect(p.requests.map((r) => r.session)).toEqual([
      { session: 0, turn: 1, previous: -1, delayMs: 0 },
      { session: 0, turn: 2, previous: 0, delayMs: 250, extendsPrevious: true },
      { session: 0, turn: 3, previous: 1, delayMs: 650, extendsPrevious: true },
      { session: 1, turn: 1, previous: -1, delayMs: 0 },
    ]);
    expect(p.requests.map((r) => r.outputLength)).toEqual([4, 2, 7, 7]);
    expect(tokensOf(p.requests[1]!)).toEqual(tokenize("and more"));
    expect(p.requests[3]!.timestampMs).toBe(40);
  });

  test("a delay on a first turn, a duplicate session, a turn without text: line and field", () => {
    const text = rows({ session_id: "s", turns: [{ text: "a", delay: 5 }] }, { session_id: "u", turns: [{ text: "a" }] }, { session_id: "u", turns: [{ text: "b" }] }, { session_id: "v", turns: [{ text: "a" }, { delay: 3 }] });
    expect(parseTrace(text, opts).errors.map((e) => `${e.line}: ${e.message}`)).toEqual([
      "1: turns[0].delay: 5 on the first turn (a first turn starts at its timestamp; only later turns wait)",
      '3: session_id: "u" again (first at line 2); a session is one line',
      "4: turns[1].text: missing (a turn needs text or texts)",
    ]);
  });
});
