// Dynamo's own frontend, mocker and state agent from the peers environment, recorded by the capture
// script: the environment works on this machine (a chat request is served, the repeat is a
// KV-routed prefix hit; the state agent attaches a raw stream), and the committed fixtures in test/fixtures/dynamo-1.6.1 still match what the installed
// Dynamo writes and sends (record shapes, frames, versions, every flag the fixtures list).
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { captureArgv, DYNAMO_VERSION, writeModelFiles } from "../../scripts/lib/peers.ts";
import { FIXTURES_DIR, makeTempDir, pipeOutput, spawnChild, withTimeout } from "../harness.ts";
import { PEERS_PYTHON, peersAvailable } from "../peers.ts";
import { HandoffReader, messageName } from "../../src/protocol/dynamo/bootstrap.ts";

const COMMITTED = join(FIXTURES_DIR, `dynamo-${DYNAMO_VERSION}`);

/** A value's shape: objects by their keys, arrays by their first element, scalars by type. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? [] : [shape(value[0])];
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, shape((value as Record<string, unknown>)[k])]));
  }
  return value === null ? "null" : typeof value;
}

const readJson = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, name), "utf8"));

/** Each discovery record's shape, keyed by what it is (bucket, type, topic or endpoint). */
function recordShapes(dir: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [bucket, records] of Object.entries(readJson(dir, "discovery.json") as Record<string, { value: Record<string, unknown> }[]>)) {
    for (const { value } of records) {
      const what = String(value.topic ?? value.endpoint ?? "");
      out[`${bucket} ${value.type} ${what.startsWith("worker_kv_query_source_") ? "worker_kv_query_source_*" : what}`] = shape(value);
    }
  }
  return out;
}

describe.if(peersAvailable())("Dynamo's frontend and mocker (peers environment)", () => {
  test("serve a chat request, route the repeat to its cached prefix, and still write and send what the fixtures hold", async () => {
    await using tmp = await makeTempDir("kvcr-capture-");
    const out = join(tmp.path, "out");
    await writeModelFiles(join(tmp.path, "mock-model"));
    await using child = spawnChild(captureArgv(PEERS_PYTHON!, out, join(tmp.path, "mock-model")), { env: { TMPDIR: tmp.path } });
    let log = "";
    pipeOutput(child, (t) => (log += t));
    const code = await withTimeout(child.proc.exited, 120_000, "the capture");
    expect(code, log).toBe(0);

    // Served: three tokens each, and the second request found the first one's prefix cached.
    const { sse } = readJson(out, "chat.json") as { sse: string[] };
    const usage = sse.map((text) => JSON.parse(text.split("\n").filter((l) => l.includes('"usage"')).pop()!.slice(6)).usage);
    expect(usage.map((u) => u.completion_tokens)).toEqual([3, 3]);
    expect(usage[0].prompt_tokens_details.cached_tokens).toBe(0);
    expect(usage[1].prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(usage[1].prompt_tokens - 16);

    expect(readJson(out, "versions.json")).toEqual(readJson(COMMITTED, "versions.json"));
    expect(recordShapes(out)).toEqual(recordShapes(COMMITTED));
    for (const name of ["request-plane.json", "response-plane.json"]) {
      const [fresh, kept] = [readJson(out, name), readJson(COMMITTED, name)];
      expect(shape(fresh.map((c: { frames?: unknown[] }) => c.frames ?? c)), name).toEqual(shape(kept.map((c: { frames?: unknown[] }) => c.frames ?? c)));
    }
    const events = (dir: string) => (readJson(dir, "kv-events.json").messages as { envelope: unknown; payload: unknown }[]).map((m) => shape([m.envelope, m.payload]));
    expect(events(out)[0]).toEqual(events(COMMITTED)[0]);
    // With a host tier: the host stores' shapes (storage_tier host_pinned, a start position).
    const hostStores = (dir: string) => (readJson(dir, "kv-events-host.json").messages as { payload: { storage_tier: string }[] }[]).flatMap((m) => m.payload).filter((e) => e.storage_tier === "host_pinned").map(shape);
    expect(hostStores(out).length).toBeGreaterThan(0);
    expect(hostStores(out)[0]).toEqual(hostStores(COMMITTED)[0]);
    // Dynamo's state agent attached the raw stream that Dynamo's own KvStateAttachmentOwner named,
    // and republished its store as router events, in the shapes the fixtures hold.
    const agent = (dir: string) => readJson(dir, "state-agent.json") as { records: { event_sources: { value: { topic: string } }[] }; republished: { envelope: unknown; payload: unknown }[] };
    const topics = (dir: string) => Object.fromEntries(agent(dir).records.event_sources.map((r) => [r.value.topic, shape(r.value)]));
    expect(topics(out)).toEqual(topics(COMMITTED));
    expect(agent(out).republished.length).toBeGreaterThan(0);
    expect(shape(agent(out).republished[0])).toEqual(shape(agent(COMMITTED).republished[0]));
    // Prefill and decode: the same cards, legs and hand-over exchange as the fixtures hold.
    for (const name of ["disagg-bootstrap.json", "disagg-no-bootstrap.json"]) {
      const pd = (dir: string) => {
        const d = readJson(dir, name) as { discovery: { mdc: { value: { card_json: Record<string, unknown> } }[] }; requests: Record<string, { body: { msgpack: unknown } }[]>; handoff: Record<string, string>[] };
        const cards = Object.fromEntries(d.discovery.mdc.map((r) => [r.value.card_json.worker_type, shape(r.value)]));
        const legs = Object.fromEntries(Object.entries(d.requests).map(([leg, frames]) => [leg, shape(frames[0]!.body.msgpack)]));
        const exchange = d.handoff.map((c) => [new HandoffReader(true).push(Buffer.from(c.decode_to_prefill!, "hex")), new HandoffReader(false).push(Buffer.from(c.prefill_to_decode!, "hex"))]
          .map((r) => (r.ok ? r.frames.map((f) => messageName(f.message)) : r.problem)));
        return { cards, legs, exchange };
      };
      expect(pd(out), name).toEqual(pd(COMMITTED));
    }
    // LoRA: the adapter's card beside the base model's, and the routing a request for it carries.
    const lora = (dir: string) => {
      const d = readJson(dir, "lora.json") as { discovery: { mdc: { value: Record<string, unknown> }[] }; requests: { model: string; routing: unknown }[] };
      return { cards: d.discovery.mdc.map((r) => shape(r.value)).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))), routing: d.requests.map((r) => [r.model, r.routing]) };
    };
    expect(lora(out)).toEqual(lora(COMMITTED));
    for (const file of readdirSync(join(COMMITTED, "help")).filter((f) => f.endsWith(".flags"))) {
      const fresh = new Set(readFileSync(join(out, "help", file), "utf8").split("\n"));
      const gone = readFileSync(join(COMMITTED, "help", file), "utf8").split("\n").filter((f) => f && !fresh.has(f));
      expect(gone, `${file.replace(/\.flags$/, "")} --help no longer lists these flags`).toEqual([]);
    }
  }, 150_000);
});
