import { expect, test } from "bun:test";
import { ReplayBuffer } from "./replay-buffer.ts";

const p = (n: number) => new Uint8Array([n]);

test("keeps the last N batches and replays from a seq", () => {
  const buf = new ReplayBuffer(3);
  for (let i = 0; i < 5; i++) buf.push(BigInt(i), p(i));
  expect(buf.length).toBe(3);
  expect([...buf.from(0n)].map(([s]) => s)).toEqual([2n, 3n, 4n]); // older than held: from the oldest
  expect([...buf.from(3n)].map(([s, b]) => [s, b[0]])).toEqual([[3n, 3], [4n, 4]]);
  expect([...buf.from(9n)]).toEqual([]);
});
