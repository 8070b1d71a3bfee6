import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { errorMessage, readChunk, SseParser } from "./openai-stream.ts";

const enc = new TextEncoder();

describe("SSE parser", () => {
  test("data lines, comments, other fields, multi-line data, CRLF and CR", () => {
    const p = new SseParser();
    expect(p.push(enc.encode(': ping\n\nevent: x\ndata: {"a":1}\n\ndata: one\ndata:two\r\n\r\ndata: three\r\rdata: [DONE]\n\n'))).toEqual(['{"a":1}', "one\ntwo", "three", "[DONE]"]);
  });

  test("a field line without a colon is the field with an empty value: a bare data line is an empty event", () => {
    expect(new SseParser().push(enc.encode("data\n\ndata\ndata: x\n\nevent\n\n"))).toEqual(["", "\nx"]);
  });

  test("split anywhere (also inside UTF-8 and between CR and LF) gives the same events", () => {
    const text = 'data: {"t":"héllo ✓"}\r\n\r\ndata: b\n\n: c\n\ndata: [DONE]\r\n\r\n';
    const bytes = enc.encode(text);
    const whole = new SseParser().push(bytes);
    expect(whole).toEqual(['{"t":"héllo ✓"}', "b", "[DONE]"]);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), (cuts) => {
        const p = new SseParser();
        const out: string[] = [];
        let at = 0;
        for (const c of [...cuts].sort((a, b) => a - b)) {
          out.push(...p.push(bytes.subarray(at, c)));
          at = c;
        }
        out.push(...p.push(bytes.subarray(at)));
        expect(out).toEqual(whole);
      }),
      { numRuns: 300, seed: 5 },
    );
  });
});

describe("completion chunks", () => {
  test("completions text, chat delta content, usage with cached tokens", () => {
    expect(readChunk('{"choices":[{"index":0,"text":"ab","finish_reason":null}]}')).toEqual({ kind: "chunk", text: "ab", usage: undefined, finishReason: undefined });
    expect(readChunk('{"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]}')).toMatchObject({ text: "x", finishReason: "length" });
    expect(readChunk('{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8}}}')).toMatchObject({
      text: "",
      usage: { promptTokens: 10, completionTokens: 4, cachedTokens: 8 },
    });
    expect(readChunk('{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":null}}')).toMatchObject({ usage: { cachedTokens: undefined } });
  });

  test("in-stream errors and malformed chunks are named", () => {
    expect(readChunk('{"error":{"message":"boom","code":500}}')).toEqual({ kind: "error", message: "boom" });
    expect(readChunk("{nope")).toMatchObject({ kind: "bad" });
    expect(readChunk("[1]").kind).toBe("bad");
    expect(errorMessage({ error: { message: "m" } })).toBe("m");
    expect(errorMessage("plain")).toBe("plain");
  });
});
