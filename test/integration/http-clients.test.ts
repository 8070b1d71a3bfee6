// Every role as plain HTTP clients reach it: an HTTP/1.0 request without Host (a load balancer's
// health check) on every GET route gets what HTTP/1.1 with Host gets, and two pipelined POSTs to the
// mocker's /v1/generate and to the frontend's /v1/completions are both answered, in order.
import { describe, expect, test } from "bun:test";
import { start as startAgent } from "../../src/roles/agent/start.ts";
import { cleanupList, makeTempDir } from "../harness.ts";
import { RawHttpClient } from "../raw-http.ts";
import { agentConfig } from "./agent-kit.ts";
import { startStack } from "./frontend-kit.ts";
import { logger } from "./mocker-kit.ts";

const cleanups = cleanupList();
const MODEL = "mocker-engine";

/** The status and, for a JSON answer, the body's keys: what an HTTP/1.0 client without Host must get alike. */
async function http10(url: string): Promise<{ status: number; keys: string[] }> {
  const { port, pathname, search } = new URL(url);
  const c = await RawHttpClient.open(Number(port), cleanups);
  c.write(`GET ${pathname}${search} HTTP/1.0\r\n\r\n`);
  await c.waitForClose();
  const [res] = c.responses;
  return { status: res!.status, keys: jsonKeys(res!.headers.get("content-type") ?? null, res!.body) };
}

async function http11(url: string): Promise<{ status: number; keys: string[] }> {
  const res = await fetch(url);
  return { status: res.status, keys: jsonKeys(res.headers.get("content-type"), await res.text()) };
}

function jsonKeys(type: string | null, body: string): string[] {
  if (!type?.startsWith("application/json")) return [];
  const v = JSON.parse(body) as unknown;
  return v !== null && typeof v === "object" && !Array.isArray(v) ? Object.keys(v).sort() : [];
}

async function expectSameAnswers(base: string, paths: string[]): Promise<void> {
  for (const path of paths) {
    const [old, now] = [await http10(`${base}${path}`), await http11(`${base}${path}`)];
    expect({ path, ...old }).toEqual({ path, ...now });
    expect({ path, status: old.status }).not.toEqual({ path, status: 500 });
  }
}

describe("every role", () => {
  test("mocker and frontend: HTTP/1.0 without Host on every GET route; pipelined POSTs answered in order", async () => {
    await using s = await startStack({ mockers: [["--num-workers", "2", "--admin"]] });
    const mockerPort = s.mockers[0]!.ports.http as number;
    const mocker = `http://127.0.0.1:${mockerPort}`;
    await expectSameAnswers(mocker, ["/live", "/health", "/metrics", "/version", "/v1/residency", "/v1/kv-dump?worker=0&dp_rank=0", "/admin/faults", "/nope"]);
    await expectSameAnswers(s.frontend.url, ["/live", "/health", "/metrics", "/version", "/ping", "/v1/models", `/v1/models/${MODEL}`, "/v1/index", "/nope"]);

    const generate = (worker: number) => JSON.stringify({ worker, token_ids: [1, 2, 3, 4, 5, 6, 7, 8], max_tokens: 2 + worker });
    const post = (path: string, body: string) => `POST ${path} HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const m = await RawHttpClient.open(mockerPort, cleanups);
    m.write(post("/v1/generate", generate(0)) + post("/v1/generate", generate(1)));
    const summaries = (await m.waitForResponses(2)).map((r) => JSON.parse(r.body.trim().split("\n").at(-1)!) as { completion_tokens: number });
    expect(summaries.map((x) => x.completion_tokens)).toEqual([2, 3]);

    const completion = (n: number) => JSON.stringify({ model: MODEL, prompt: "hello there", max_tokens: n });
    const f = await RawHttpClient.open(Number(new URL(s.frontend.url).port), cleanups);
    f.write(post("/v1/completions", completion(1)) + post("/v1/completions", completion(3)));
    const answers = (await f.waitForResponses(2)).map((r) => [r.status, (JSON.parse(r.body) as { usage: { completion_tokens: number } }).usage.completion_tokens]);
    expect(answers).toEqual([[200, 1], [200, 3]]);
  });

  test("agent: HTTP/1.0 without Host on every GET route", async () => {
    const dir = await makeTempDir("kvcr-http10-");
    cleanups.push(() => dir[Symbol.asyncDispose]());
    const agent = await startAgent(agentConfig(["--port", "0", "--namespace", "http10", "--discovery-dir", dir.path]), { logger });
    cleanups.push(() => agent.close());
    await agent.ready;
    await expectSameAnswers(`http://127.0.0.1:${agent.ports.http}`, ["/live", "/health", "/metrics", "/version", "/v1/slots", "/v1/snapshot", "/nope"]);
  });
});
