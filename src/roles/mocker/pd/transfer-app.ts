// The prefill side's transfer endpoint (transfer-wire.ts): pull and done, answered from the held
// transfers. A pure fetch handler; the mocker serves it on --kv-transfer-port.
import { openAiError } from "../../../protocol/openai.ts";
import type { HeldTransfers } from "./held-transfers.ts";
import { DONE_PATH, PULL_PATH, pullBodyProblem, type PullBody } from "./transfer-wire.ts";

const MAX_BODY_BYTES = 1 << 20;

export function createTransferFetch(held: HeldTransfers): (req: Request) => Promise<Response> {
  return async (req) => {
    const path = new URL(req.url).pathname;
    if (path !== PULL_PATH && path !== DONE_PATH) return openAiError(404, `no route ${req.method} ${path}; routes: POST ${PULL_PATH}, POST ${DONE_PATH}`, { code: "not_found" });
    if (req.method !== "POST") return openAiError(405, `use POST for ${path}`);
    const text = await req.text();
    if (text.length > MAX_BODY_BYTES) return openAiError(413, `body over ${MAX_BODY_BYTES} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return openAiError(400, "body: not JSON");
    }
    const problem = pullBodyProblem(body, path === PULL_PATH);
    if (problem !== undefined) return openAiError(400, problem);
    const b = body as PullBody;
    if (path === DONE_PATH) return new Response(null, { status: held.done(b.remote_engine_id, b.remote_request_id) ? 204 : 404 });
    const answer = held.pull(b.remote_engine_id, b.remote_request_id, b.remote_block_ids);
    return answer.ok ? Response.json({ blocks: answer.blocks }) : openAiError(answer.status, answer.message);
  };
}
