// The routers' own prefill/decode modes in front of an `up` fleet of kvcr-mock prefill and decode
// workers (peers environment): vllm-router's two stages (NixlConnector's kv_transfer_params) and
// sglang-router's legs sent at once (paired by bootstrap_room, met on the prefill process's
// transfer port), each from its shipped stack file, serve 20 chat requests with every prompt's KV
// pulled; a decode leg whose prefill never comes is computed on the decode worker, counted.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { makeTempDir } from "../harness.ts";
import { peersAvailable } from "../peers.ts";
import { chat, EXAMPLES, metricSum, MODEL, startStack, stop, type Stack } from "./router-stack.ts";

/** 20 chat requests, each a prompt of its own; then every decode pulled its KV and every prefill leg ran on a prefill worker. */
async function servesWithPulls(stack: Stack): Promise<void> {
  const prefill = stack.state.processes.find((p) => p.name === "mocker-0")!.url;
  const decode = stack.state.processes.find((p) => p.name === "mocker-1")!.url;
  for (let i = 0; i < 20; i++) {
    const served = await chat(stack, Array.from({ length: 200 }, (_, k) => `q${i}w${k}`).join(" "));
    expect(served.prompt).toBeGreaterThan(200);
  }
  expect(await metricSum(decode, "kvcr_mocker_kv_transfers_total")).toBe(20);
  expect(await metricSum(decode, "kvcr_mocker_kv_recomputed_pulls_total")).toBe(0);
  expect(await metricSum(decode, "kvcr_mocker_kv_transfer_bytes_total")).toBeGreaterThan(0);
  expect(await metricSum(decode, "vllm:nixl_xfer_time_seconds_sum")).toBeGreaterThan(0);
  // The prefill legs: one finished request per chat on the prefill workers, one token each.
  expect(await metricSum(prefill, "vllm:request_success_total")).toBe(20);
  expect(await metricSum(prefill, "vllm:generation_tokens_total")).toBe(20);
  expect(await metricSum(decode, "vllm:request_success_total")).toBe(20);
}

describe.if(peersAvailable())("the routers' P/D modes in front of kvcr-mock prefill and decode workers (peers environment)", () => {
  test("vllm-router --vllm-pd-disaggregation (examples/vllm-router-pd.yaml): two stages, every prompt's KV pulled", async () => {
    await using tmp = await makeTempDir("kvcr-routers-pd-");
    await using cleanups = new AsyncDisposableStack();
    const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "vllm-router-pd.yaml")], cleanups);
    await servesWithPulls(stack);
    await stop(stack);
  }, 120_000);

  test("sglang-router --pd-disaggregation (examples/sglang-router-pd.yaml): legs paired by room, every prompt's KV pulled; a lone decode leg is computed there, counted", async () => {
    await using tmp = await makeTempDir("kvcr-routers-pd-");
    await using cleanups = new AsyncDisposableStack();
    const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "sglang-router-pd.yaml")], cleanups);
    await servesWithPulls(stack);
    const decode = stack.state.processes.find((p) => p.name === "mocker-1")!;
    const res = await fetch(`${decode.worker_api_urls![0]}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "a room nobody prefills" }], max_tokens: 2, bootstrap_host: "127.0.0.1", bootstrap_port: 1, bootstrap_room: 42 }),
    });
    expect(res.status).toBe(200);
    expect(await metricSum(decode.url, "kvcr_mocker_kv_recomputed_pulls_total")).toBe(1);
    await stop(stack);
  }, 120_000);
});
