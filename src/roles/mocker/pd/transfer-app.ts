// The prefill side's transfer endpoint (transfer-wire.ts): pull and done, answered from the held
// transfers, and meet, answered from the bootstrap rooms once the room's prefill holds its KV. A
// pure fetch handler; the mocker serves it on --kv-transfer-port.
import { openAiError } from "../../../protocol/openai.ts";
import type { BootstrapRooms } from "./bootstrap-rooms.ts";
import type { HeldTransfers } from "./held-transfers.ts";
import { DONE_PATH, MEET_PATH, meetBodyProblem, PULL_PATH, pullBodyProblem, type MeetBody, type PullBody } from "./transfer-wire.ts";

const MAX_BODY_BYTES = 1 << 20;
const ROUTES = `routes: POST ${PULL_PATH}, POST ${DONE_PATH}, POST ${MEET_PATH}`;

export function createTransferFetch(held: HeldTransfers, rooms?: BootstrapRooms): (req: Request) => Promise<Response> {
  return async (req) => {
    const path = new URL(req.url).pathname;
    if (path !== PULL_PATH && path !== DONE_PATH && path !== MEET_PATH) return openAiError(404, `no route ${req.method} ${path}; ${ROUTES}`, { code: "not_found" });
    if (req.method !== "POST") return openAiError(405, `use POST for ${path}`);
    const text = await req.text();
    if (text.length > MAX_BODY_BYTES) return openAiError(413, `body over ${MAX_BODY_BYTES} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return openAiError(400, "body: not JSON");
    }
    if (path === MEET_PATH) return meet(body, rooms);
    const problem = pullBodyProblem(body, path === PULL_PATH);
    if (problem !== undefined) return openAiError(400, problem);
    const b = body as PullBody;
    if (path === DONE_PATH) return new Response(null, { status: held.done(b.remote_engine_id, b.remote_request_id) ? 204 : 404 });
    const answer = held.pull(b.remote_engine_id, b.remote_request_id, b.remote_block_ids);
    return answer.ok ? Response.json({ blocks: answer.blocks }) : openAiError(answer.status, answer.message);
  };
}

/** The room's prefill holds its KV: 200 with its prompt length (the blocks are handed over, so freed here); else why not. */
async function meet(body: unknown, rooms: BootstrapRooms | undefined): Promise<Response> {
  const problem = meetBodyProblem(body);
  if (problem !== undefined) return openAiError(400, problem);
  if (rooms === undefined) return openAiError(404, "this prefill process pairs no bootstrap rooms", { code: "not_found" });
  const room = BigInt((body as MeetBody).bootstrap_room);
  const outcome = await rooms.decodeArrived(room);
  if (outcome === undefined) return openAiError(504, `no prefill of room ${room} held its KV in time`);
  if (outcome.kind === "aborted") return openAiError(409, `the prefill of room ${room} ended without its KV (cancelled, or another decode took it)`);
  outcome.release();
  return Response.json({ prompt_tokens: outcome.promptTokens });
}
