import { expect, test } from "bun:test";
import fc from "fast-check";
import { summaryLine, tokenLine, type GenerateSummary } from "../../protocol/generate.ts";
import { directResponse } from "../../transport/http/direct-response.ts";
import { HEARTBEAT_MS, TokenStream } from "./token-stream.ts";

const summary: GenerateSummary = { finish_reason: "length", prompt_tokens: 3, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 4 };
const turn = () => new Promise((r) => setImmediate(r));
const decoder = new TextDecoder();

/** The stream as any reader other than the server gets it: Bun's direct ReadableStream. */
const bodyOf = (s: TokenStream) => directResponse(s).body;

/** Reads every chunk of a body as text, in order. */
async function chunks(body: ReadableStream<Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  for await (const c of body) out.push(decoder.decode(c));
  return out;
}

test("token lines are byte-identical to tokenLine() for any u32 id", async () => {
  const edge = [0, 1, 9, 10, 99, 100, 65_535, 2 ** 31 - 1, 2 ** 31, 0xffff_ffff];
  const ids = [...edge, ...fc.sample(fc.integer({ min: 0, max: 0xffff_ffff }), { numRuns: 500, seed: 7 })];
  const s = new TokenStream(() => {});
  const text = new Response(bodyOf(s)).text();
  s.tokens(ids);
  s.finish({ ...summary, completion_tokens: ids.length });
  expect(await text).toBe(ids.map(tokenLine).join("") + summaryLine({ ...summary, completion_tokens: ids.length }));
});

test("each turn's tokens leave in one write, a line per token, the summary line last", async () => {
  const s = new TokenStream(() => {});
  const read = chunks(bodyOf(s));
  await turn();
  const one = [0];
  for (const id of [5, 6]) {
    one[0] = id;
    s.tokens(one); // the caller reuses its array: the stream must not keep it
  }
  await turn();
  s.tokens([7]);
  await turn();
  s.tokens([8]);
  s.finish(summary);
  const got = await read;
  expect(got.join("")).toBe('{"token_id":5}\n{"token_id":6}\n{"token_id":7}\n{"token_id":8}\n' + summaryLine(summary));
  expect(got[0]).toBe('{"token_id":5}\n{"token_id":6}\n');
  expect(got[1]).toBe('{"token_id":7}\n');
});

test("output produced before the body is read is kept, summary included", async () => {
  const s = new TokenStream(() => {});
  s.tokens([1, 2]);
  await turn();
  s.tokens([3]);
  s.finish(summary);
  expect(await new Response(bodyOf(s)).text()).toBe('{"token_id":1}\n{"token_id":2}\n{"token_id":3}\n' + summaryLine(summary));
});

test("long outputs grow the buffer without losing a line", async () => {
  const s = new TokenStream(() => {});
  const text = new Response(bodyOf(s)).text();
  const ids = Array.from({ length: 10_000 }, (_, i) => i * 429_497);
  s.tokens(ids);
  s.finish(summary);
  const lines = (await text).split("\n");
  expect(lines).toHaveLength(10_002); // tokens, summary, and the empty string after the last \n
  expect(lines[9_999]).toBe(`{"token_id":${ids[9_999]}}`);
  expect(JSON.parse(lines[10_000]!)).toEqual(summary);
});

test("a reader that cancels cancels the request once, whatever output or cancels follow", async () => {
  let cancelled = 0;
  const s = new TokenStream(() => cancelled++);
  const reader = bodyOf(s).getReader();
  s.tokens([1]);
  const first = await reader.read();
  expect(decoder.decode(first.value)).toBe('{"token_id":1}\n');
  await reader.cancel();
  expect(cancelled).toBe(1);
  s.tokens([2]);
  s.finish(summary);
  s.cancel();
  await turn();
  expect(cancelled).toBe(1);
});

test("a finished stream is never reported cancelled", async () => {
  let cancelled = 0;
  const s = new TokenStream(() => cancelled++);
  const text = new Response(bodyOf(s)).text();
  s.finish(summary);
  s.cancel();
  expect(await text).toBe(summaryLine(summary));
  expect(cancelled).toBe(0);
});

test("a request with no output yet sends blank heartbeat lines (its head goes out with the first), and none once tokens flow", async () => {
  const s = new TokenStream(() => {});
  let started = false;
  void s.firstOutput.then(() => (started = true));
  const read = chunks(bodyOf(s));
  await Bun.sleep(HEARTBEAT_MS * 2.5);
  expect(started).toBe(true); // the head could go out: the frontend's stall watch hears the worker
  s.tokens([7]);
  await Bun.sleep(HEARTBEAT_MS * 1.5);
  s.finish({ ...summary, completion_tokens: 1 });
  const text = (await read).join("");
  expect(text).toMatch(/^\n+\{"token_id":7\}\n\{"finish_reason"/); // a heartbeat or two, then the tokens and no more
  expect(text.split("\n").filter((l) => l === "").length).toBeLessThanOrEqual(4); // 2 heartbeats + the final newline split
});
