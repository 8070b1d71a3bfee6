// The context-length rule of vLLM's OpenAI server, used by the mocker's /v1/generate and by the
// frontend before routing: prompt + max_tokens above max_model_len is refused with 400, worded as
// vLLM words it (clients match on "maximum context length").

/** The 400 message when the request does not fit, else undefined. */
export function contextLengthProblem(maxModelLen: number | undefined, promptTokens: number, maxTokens: number): string | undefined {
  if (maxModelLen === undefined || promptTokens + maxTokens <= maxModelLen) return undefined;
  return (
    `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens + maxTokens} tokens ` +
    `(${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`
  );
}

/** OpenAI's error code for it (what OpenAI's own API returns). */
export const CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded";
