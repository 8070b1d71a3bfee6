// One end-to-end suite, two implementations: the same checks run against a stack
// whose roles start in this process (each role's start(), configured from the launcher's own plan)
// and against `kvcr-mock up` running them as child processes. Not picked up alone (*.suite.ts).
import { describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { waitFor } from "./harness.ts";

/** What the suite needs from a running stack. */
export interface RunningStack extends AsyncDisposable {
  frontendUrl: string;
  agentUrl: string;
}

/** The stack every implementation starts: 1 agent, 2 mocker processes × 2 workers, 1 frontend (kv router). */
export const SUITE_STACK_FLAGS = ["--mocker-processes", "2", "--workers-per-process", "2", "--block-size", "16", "--num-gpu-blocks-override", "256", "--speedup-ratio", "0", "--http-port", "0", "--agent-port", "0", "--log-level", "silent"];

export function stackSuite(name: string, start: () => Promise<RunningStack>): void {
  describe(`stack suite: ${name}`, () => {
    test("a ready stack, its model listed, every worker routed and every slot attached, serves a repeated prompt from the KV cache", async () => {
      await using stack = await start();
      const client = new OpenAI({ baseURL: `${stack.frontendUrl}/v1`, apiKey: "unused", maxRetries: 0 });
      expect((await client.models.list()).data.map((m) => m.id)).toEqual(["mock-model"]);
      const health = (await (await fetch(`${stack.frontendUrl}/health`)).json()) as { instances: number };
      expect(health.instances).toBe(4);
      const slots = (await (await fetch(`${stack.agentUrl}/v1/slots`)).json()) as { state: string }[];
      expect(slots.map((s) => s.state)).toEqual(["active", "active", "active", "active"]);

      const content = `${"a shared instruction block for the stack suite ".repeat(10)} and one question`;
      const first = await client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content }], max_tokens: 6 });
      expect(first.usage!.completion_tokens).toBe(6);
      expect(first.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
      // The first request's blocks reach the router as KV events (mocker → agent → frontend in
      // state-agent mode): wait until its index holds them before repeating the prompt.
      const fullBlocks = Math.floor(first.usage!.prompt_tokens / 16);
      await waitFor(async () => (await deviceIndexBlocks(stack.frontendUrl)) >= fullBlocks, { timeoutMs: 10_000, what: `the frontend's index to hold the first prompt's ${fullBlocks} blocks` });
      const second = await client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content }], max_tokens: 6 });
      // The KV router sends the repeat to the worker holding its blocks (full 16-token blocks only).
      expect(second.usage!.prompt_tokens_details!.cached_tokens).toBe(Math.floor(second.usage!.prompt_tokens / 16) * 16);
    }, 60_000);
  });
}

/** Device-tier blocks in the frontend router's index (its /metrics). */
async function deviceIndexBlocks(frontendUrl: string): Promise<number> {
  const text = await (await fetch(`${frontendUrl}/metrics`)).text();
  const m = /^kvcr_frontend_index_blocks\{tier="device"\} (\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}
