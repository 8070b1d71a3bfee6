// The peers of bench/frontend-throughput.ts: a plain Bun.serve that does the frontend's proxying
// with no routing: POST /v1/completions (token-id prompt) → the next worker round-robin on the
// mocker's /v1/generate, NDJSON read to the end, an OpenAI completion body back. No index, no
// event feeds, no tokenizer, no validation beyond JSON.parse. Prints its URL on stdout.
// TRANSPORT: "fetch" (what a plain Bun proxy does) or "keepalive" (the frontend's own pooled
// client, src/transport/http/keepalive-client.ts: the same transport with no routing).
// Run: bun bench/lib/plain-proxy.ts MOCKER_URL NUM_WORKERS fetch|keepalive
import { KeepAliveClient } from "../../src/transport/http/keepalive-client.ts";

const [mockerUrl, workersText, transport] = process.argv.slice(2);
if (transport !== "fetch" && transport !== "keepalive") throw new Error(`transport must be fetch or keepalive, got ${transport}`);
const workers = Number(workersText);
const url = `${mockerUrl}/v1/generate`;
const client = new KeepAliveClient();
let next = 0;

async function generate(body: string): Promise<string> {
  if (transport === "fetch") return (await fetch(url, { method: "POST", body })).text();
  const res = await client.request(url, { method: "POST", body });
  let text = "";
  const decoder = new TextDecoder();
  for (let c = await res.read(); c !== undefined; c = await res.read()) text += decoder.decode(c, { stream: true });
  return text;
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as { model: string; prompt: number[]; max_tokens: number };
    const text = await generate(JSON.stringify({ worker: next++ % workers, dp_rank: 0, token_ids: body.prompt, max_tokens: body.max_tokens }));
    const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, number>);
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
