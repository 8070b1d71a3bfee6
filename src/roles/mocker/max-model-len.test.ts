// The mocker refuses prompt + max_tokens above --max-model-len with vLLM's 400, and publishes the
// limit in its worker record so the frontend can refuse first.
import { expect, test } from "bun:test";
import { commonOptions } from "../../config/common.ts";
import { loadConfig } from "../../config/load.ts";
import { mockerOptions } from "../../config/mocker.ts";
import { WorkerRecordSchema } from "../../protocol/records.ts";
import { checkRecord } from "../../protocol/records.ts";
import { createMockerFetch, type WorkerPool } from "./http-app.ts";
import { workerRecord } from "./records.ts";

const pool: WorkerPool = {
  healthy: () => true,
  submit: (_req, sink) => {
    sink.finish({ finish_reason: "length", prompt_tokens: 1, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 0 });
    return { ok: true, requestId: "r" };
  },
  cancel: () => {},
  metrics: () => [],
};
const generate = (body: unknown) =>
  createMockerFetch(pool, { maxPromptTokens: 100, maxOutputTokens: 100, maxModelLen: 10 })(new Request("http://mocker/v1/generate", { method: "POST", body: JSON.stringify(body) }));

test("prompt + max_tokens above --max-model-len is a 400 worded as vLLM's", async () => {
  const res = await generate({ worker: 0, token_ids: [1, 2, 3], max_tokens: 8 });
  expect(res.status).toBe(400);
  const err = ((await res.json()) as { error: { message: string; code: string } }).error;
  expect(err.message).toStartWith("This model's maximum context length is 10 tokens. However, you requested 11 tokens (3 in the messages, 8 in the completion).");
  expect(err.code).toBe("context_length_exceeded");
  expect((await generate({ worker: 0, token_ids: [1, 2, 3], max_tokens: 7 })).status).toBe(200);
});

test("the worker record carries max_model_len, and a record without it still parses", () => {
  const config = loadConfig({ ...mockerOptions, ...commonOptions }, { argv: ["--max-model-len", "4096"], env: {} }).config;
  const id = { workerId: "w", index: 0, rawTopic: "", cacheOwnerIds: [] } as unknown as Parameters<typeof workerRecord>[1];
  const record = workerRecord(config, id, { rawPorts: [], replayPorts: undefined, routerEventsEndpoint: undefined, hintPorts: undefined }, { httpUrl: "http://127.0.0.1:1", topology: { labels: {} } as never, domain: undefined });
  expect(record.max_model_len).toBe(4096);
  const { max_model_len: _, ...older } = record;
  expect(checkRecord(WorkerRecordSchema, older).ok).toBe(true);
  expect(checkRecord(WorkerRecordSchema, { ...record, max_model_len: 0 }).ok).toBe(false);
});
