// The routes beyond generation that vLLM's server has and its clients call, for the frontend and
// each mock worker's own API alike: the model card (`/v1/models` entries with `root` and
// `max_model_len`, read by `vllm bench serve` without --model) and `GET /v1/models/{id}` (OpenAI's),
// `POST /tokenize` and `POST /detokenize` (vLLM's bodies, on the built-in tokenizer; bench calls
// them to re-align prompts). The caller reads bodies (size and time caps) and checks methods.
import { applyChatTemplate, detokenize, detokenizeOne, tokenize } from "../../../core/text/tokenizer.ts";
import { BadRequest, openAiError, parseChatRequest, tokenIds, type RequestLimits } from "../../../protocol/openai.ts";

export const MODELS_PREFIX = "/v1/models/";

/** What these routes need of the routing state. */
export interface ModelView {
  models(): string[];
  /** The smallest max_model_len the model's workers advertise; undefined when none does. */
  maxModelLen(model: string): number | undefined;
  /** A LoRA adapter's base model (its card's `parent`); undefined for a base model. */
  parentOf?(model: string): string | undefined;
  /** A model's card `root` when not its id (vLLM: an adapter's path). */
  rootOf?(model: string): string | undefined;
}

/**
 * vLLM's ModelCard fields (without `permission`): `root` is what a client loads a tokenizer from; a
 * LoRA adapter's card has `parent` = its base model (vLLM's `root` is then the adapter's path).
 */
export function modelCard(id: string, maxModelLen: number | undefined, parent: string | null = null, root: string = id) {
  return { id, object: "model", created: 0, owned_by: "kvcr-mock", root, parent, ...(maxModelLen !== undefined ? { max_model_len: maxModelLen } : {}) };
}

export function modelList(view: ModelView) {
  return { object: "list", data: view.models().map((id) => modelCard(id, view.maxModelLen(id), view.parentOf?.(id) ?? null, view.rootOf?.(id) ?? id)) };
}

/** `GET /v1/models/{id}`: the id URL-encoded (`Qwen%2FQwen3-0.6B`) or plain (`Qwen/Qwen3-0.6B`). */
export function modelRoute(view: ModelView, encodedId: string): Response {
  let id: string;
  try {
    id = decodeURIComponent(encodedId);
  } catch {
    return openAiError(400, `bad model id in the path: ${JSON.stringify(encodedId)} is not valid URL encoding`, { param: "model" });
  }
  return view.models().includes(id) ? Response.json(modelCard(id, view.maxModelLen(id), view.parentOf?.(id) ?? null, view.rootOf?.(id) ?? id)) : modelNotFound(id);
}

// vLLM's wording (its _check_model) and OpenAI's code.
export const modelNotFound = (id: string) => openAiError(404, `The model \`${id}\` does not exist.`, { param: "model", code: "model_not_found" });

type Body = Record<string, unknown>;

/** The body as an object and the model it names (optional, as in vLLM: absent = the first served model). */
function common(json: unknown, view: ModelView): { body: Body; model: string | undefined } | Response {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return openAiError(400, "body must be a JSON object", { param: "body" });
  const body = json as Body;
  if (body.model !== undefined && body.model !== null && typeof body.model !== "string") return openAiError(400, "model: expected a string", { param: "model" });
  const served = view.models();
  if (typeof body.model === "string" && !served.includes(body.model)) return modelNotFound(body.model);
  return { body, model: typeof body.model === "string" ? body.model : served[0] };
}

function optionalBool(body: Body, key: string): boolean | undefined | Response {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  return typeof v === "boolean" ? v : openAiError(400, `${key}: expected true or false`, { param: key });
}

/**
 * `POST /tokenize`, vLLM's two bodies: `{model?, prompt, add_special_tokens?, return_token_strs?}`
 * or `{model?, messages, add_generation_prompt?, add_special_tokens?, return_token_strs?}` →
 * `{count, max_model_len, tokens, token_strs}` (`token_strs` null unless asked for, as vLLM's
 * serialized answer has it). The mock vocabulary has no special tokens, so `add_special_tokens`
 * changes nothing; `max_model_len` is null while no worker of the model advertises one.
 */
export function tokenizeAnswer(json: unknown, view: ModelView, limits: RequestLimits, tok: (text: string) => number[] = tokenize): Response {
  const c = common(json, view);
  if (c instanceof Response) return c;
  const { body, model } = c;
  for (const key of ["add_special_tokens", "add_generation_prompt", "return_token_strs"]) {
    const v = optionalBool(body, key);
    if (v instanceof Response) return v;
  }
  const hasPrompt = body.prompt !== undefined && body.prompt !== null;
  const hasMessages = body.messages !== undefined && body.messages !== null;
  if (hasPrompt === hasMessages) return openAiError(400, "give exactly one of prompt (a string) or messages (a chat)", { param: hasPrompt ? "messages" : "prompt" });
  let text: string;
  if (hasPrompt) {
    if (typeof body.prompt !== "string") return openAiError(400, "prompt: expected a string", { param: "prompt" });
    if (Buffer.byteLength(body.prompt, "utf8") > limits.maxPromptBytes) return openAiError(400, `prompt: text longer than ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`, { param: "prompt" });
    text = body.prompt;
  } else {
    // The chat route's own messages rule (roles, text parts, the byte limit); the model is not its to check here.
    const chat = parseChatRequest({ model: "-", messages: body.messages }, limits);
    if (chat instanceof BadRequest) return openAiError(400, chat.message, { param: chat.param });
    text = applyChatTemplate(chat.messages!);
    if (body.add_generation_prompt === false) text = text.slice(0, text.lastIndexOf("<|im_start|>assistant\n"));
  }
  const tokens = tok(text);
  return Response.json({
    count: tokens.length,
    max_model_len: model !== undefined ? (view.maxModelLen(model) ?? null) : null,
    tokens,
    token_strs: body.return_token_strs === true ? tokens.map((t) => detokenizeOne(t)) : null,
  });
}

/** `POST /detokenize`: `{model?, tokens}` → `{prompt}`, the mock vocabulary's rendering of the ids. */
export function detokenizeAnswer(json: unknown, view: ModelView): Response {
  const c = common(json, view);
  if (c instanceof Response) return c;
  const tokens = c.body.tokens;
  if (!Array.isArray(tokens)) return openAiError(400, "tokens: expected an array of token ids", { param: "tokens" });
  const ids = tokenIds(tokens, "tokens");
  if (ids instanceof BadRequest) return openAiError(400, ids.message, { param: ids.param });
  return Response.json({ prompt: detokenize(ids) });
}
