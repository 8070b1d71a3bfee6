// The peer of bench/frontend-throughput.ts: a plain Bun.serve that does the frontend's proxying
// with no routing: POST /v1/completions (token-id prompt) → the next worker round-robin on the
// mocker's /v1/generate, NDJSON read to the end, an OpenAI completion body back. No index, no
// event feeds, no tokenizer, no validation beyond JSON.parse. Prints its URL on stdout.
// Run: bun bench/lib/plain-proxy.ts MOCKER_URL NUM_WORKERS
const [mockerUrl, workersText] = process.argv.slice(2);
const workers = Number(workersText);
let next = 0;
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as { model: string; prompt: number[]; max_tokens: number };
    const res = await fetch(`${mockerUrl}/v1/generate`, {
      method: "POST",
      body: JSON.stringify({ worker: next++ % workers, dp_rank: 0, token_ids: body.prompt, max_tokens: body.max_tokens }),
    });
    const lines = (await res.text()).trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, number>);
    const summary = lines.at(-1)!;
    return Response.json({
      id: "cmpl-plain",
      object: "text_completion",
      created: 0,
      model: body.model,
      choices: [{ index: 0, text: lines.slice(0, -1).map((l) => ` t${l.token_id}`).join(""), logprobs: null, finish_reason: "length" }],
      usage: { prompt_tokens: summary.prompt_tokens, completion_tokens: summary.completion_tokens, total_tokens: summary.prompt_tokens! + summary.completion_tokens! },
    });
  },
});
console.log(`http://127.0.0.1:${server.port}`);
