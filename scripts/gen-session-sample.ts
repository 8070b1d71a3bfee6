// Writes traces/sample_sessions_trace.jsonl, the built-in sample session trace
// (`--trace builtin:sample-sessions`): Mooncake rows with session_id and delay, as Dynamo's mocker
// and aiperf read them. 64 sessions of 6 turns; four system prompts of two 512-token blocks each
// shared by the sessions; every turn's hash_ids are the previous turn's plus 1–3 new blocks (the
// answer and the next input), so a session's prompt grows as a chat does. Seeded, so it is rewritten
// byte for byte: bun scripts/gen-session-sample.ts
import { writeFileSync } from "node:fs";
import { createRng } from "../src/core/random/rng.ts";

const rng = createRng(39);
const BLOCK = 512;
const rows: string[] = [];
let nextBlock = 1000;
for (let s = 0; s < 64; s++) {
  const system = s % 4;
  let ids = [system * 2, system * 2 + 1];
  const start = Math.round(s * 900 + rng.next() * 600);
  for (let turn = 1; turn <= 6; turn++) {
    const grow = 1 + rng.int(3);
    ids = [...ids, ...Array.from({ length: grow }, () => nextBlock++)];
    const input = ids.length * BLOCK - rng.int(BLOCK);
    const output = 64 + rng.int(320);
    const row: Record<string, unknown> = { session_id: `s${s}` };
    if (turn === 1) row.timestamp = start;
    else row.delay = Math.round(500 + rng.next() * 4500);
    Object.assign(row, { input_length: input, output_length: output, hash_ids: ids });
    rows.push(JSON.stringify(row));
  }
}
// Session by session: a session's rows are its turns in order.
writeFileSync(new URL("../traces/sample_sessions_trace.jsonl", import.meta.url), rows.join("\n") + "\n");
