// Every role answers GET /version with `{"version"}` (vLLM's shape), the build's version string.
import { expect, test } from "bun:test";
import pkg from "../../../../package.json" with { type: "json" };
import { app, ndjsonWorker, routingState } from "../../../../test/routing/fake-fleet.ts";
import { createLogger } from "../../../lib/logger.ts";
import { createBlockHasher } from "../../../lib/xxh3.ts";
import { KvStateAgent } from "../../agent/agent.ts";
import { createAgentApp } from "../../agent/http-app.ts";
import { RouterEventOutbound } from "../../agent/outbound.ts";
import { createMockerFetch, type WorkerPool } from "../../mocker/http-app.ts";
import { VERSION } from "../../../lib/version.ts";

test("mocker, agent and frontend: GET /version → {version}; another method → 405", async () => {
  expect(VERSION.startsWith(`${pkg.version}+`)).toBe(true);
  const pool: WorkerPool = { healthy: () => true, submit: () => ({ ok: false, status: 503, message: "no" }), cancel: () => {}, metrics: () => [] };
  const mocker = createMockerFetch(pool, { maxPromptTokens: 10, maxOutputTokens: 10 });
  const logger = createLogger({ level: "silent" });
  await using outbound = new RouterEventOutbound("127.0.0.1", 0, logger);
  const agentCore = new KvStateAgent({ maxSlots: 1, retentionMs: 1000, replayTimeoutMs: 1000, logger, hasher: createBlockHasher(), outbound });
  try {
    const agent = createAgentApp(agentCore, () => true);
    const frontend = app(routingState("round-robin"), ndjsonWorker());
    for (const fetch of [mocker, agent.fetch, frontend.fetch]) {
      const res = await fetch(new Request("http://role/version"));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("application/json");
      expect(await res.json()).toEqual({ version: VERSION });
      expect((await fetch(new Request("http://role/version", { method: "POST" }))).status).toBe(405);
    }
  } finally {
    agentCore.close();
  }
});
