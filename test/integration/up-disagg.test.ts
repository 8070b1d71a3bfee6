// A disaggregated stack from `up --prefill-workers 2 --decode-workers 2` (state-agent mode, one
// worker per mocker process): chat requests through the frontend take their prefill leg on the
// prefill workers and their decode leg on the decode workers (which pull the KV the prefill
// workers hold), a LoRA adapter's too (both legs under the adapter, its blocks indexed under its
// hashes on both workers); then a prefill worker killed mid-load costs at most 2 % of the requests.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { CLI_ENTRY, pidAlive, spawnProcess, tempDir, waitFor } from "../harness.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface State {
  frontend_url: string;
  processes: { name: string; role: string; pid: number; url: string }[];
}

async function metric(url: string, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const l of text.split("\n")) if (l.startsWith(`${name}${labels}`) && (l[name.length + labels.length] === " " || l[name.length + labels.length] === "{")) sum += Number(l.slice(l.lastIndexOf(" ") + 1));
  return sum;
}

const chat = (content: string) => ({ model: "mock-model", messages: [{ role: "user", content }], max_tokens: 6 });

describe("up with prefill and decode workers", async () => {
  const dir = tempDir("kvcr-up-pd-");
  cleanups.push(() => dir[Symbol.dispose]());
  const stateFile = join(dir.path, "state.json");
  const child = spawnProcess([
    process.execPath, CLI_ENTRY, "up", "--discovery-dir", join(dir.path, "discovery"), "--agent-port", "0", "--http-port", "0", "--state-file", stateFile,
    "--prefill-workers", "2", "--decode-workers", "2", "--workers-per-process", "1", "--block-size", "16", "--num-gpu-blocks-override", "512",
    "--timing-model", "fixed", "--prefill-ms", "2", "--decode-ms", "2", "--grace-period", "5", "--lora-modules", "sql-lora=/adapters/sql",
  ]);
  cleanups.push(async () => void (await child[Symbol.asyncDispose]()));
  await child.readLine((l) => l.startsWith("kvcr-mock stack ready"), 90_000);
  const state = JSON.parse(readFileSync(stateFile, "utf8")) as State;
  cleanups.push(async () => {
    // up first, so it restarts nothing; then every process the state file names now (a prefill
    // worker killed by a test was restarted under a new pid) and those it named at start.
    await child[Symbol.asyncDispose]();
    const now = JSON.parse(readFileSync(stateFile, "utf8")) as State;
    for (const p of [...state.processes, ...now.processes]) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
  });
  const mockers = state.processes.filter((p) => p.role === "mocker");
  const [p0, p1, d0, d1] = mockers;
  const fe = state.frontend_url;

  test("the prefill leg runs on the prefill workers, the decode leg on the decode workers, with the KV handed over", async () => {
    const served = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${fe}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(chat(`request ${i}: ${"a long shared system prompt ".repeat(20)}`)) });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { usage: { completion_tokens: number }; choices: { message: { content: string } }[] };
      expect(body.usage.completion_tokens).toBe(6);
      served.add(res.headers.get("x-kvcr-worker")!);
    }
    // Every answer came from a decode worker; the prefill workers computed, the decode workers pulled.
    const decodeIds = new Set<string>();
    for (const d of [d0!, d1!]) for (const w of ((await (await fetch(`${d.url}/v1/residency`)).json()) as { sources: { worker_id: string }[] }).sources) decodeIds.add(w.worker_id);
    for (const w of served) expect(decodeIds.has(w)).toBe(true);
    expect(await metric(fe, "kvcr_frontend_disagg_legs_total", '{leg="prefill"}')).toBe(8);
    expect(await metric(fe, "kvcr_frontend_disagg_legs_total", '{leg="decode"}')).toBe(8);
    expect((await metric(d0!.url, "kvcr_mocker_kv_transfers_total")) + (await metric(d1!.url, "kvcr_mocker_kv_transfers_total"))).toBe(8);
    await waitFor(async () => (await metric(p0!.url, "kvcr_mocker_kv_pulled_holds_total")) + (await metric(p1!.url, "kvcr_mocker_kv_pulled_holds_total")) === 8, { timeoutMs: 10_000, what: "the prefill workers freeing the 8 pulled holds" });
  });

  test("a LoRA adapter's request is disaggregated too: both legs under the adapter, its blocks indexed under the adapter's hashes on the prefill and the decode worker", async () => {
    const before = { prefill: await metric(fe, "kvcr_frontend_disagg_legs_total", '{leg="prefill"}'), decode: await metric(fe, "kvcr_frontend_disagg_legs_total", '{leg="decode"}') };
    const prompt = Array.from({ length: 64 }, (_, i) => 7000 + i);
    const res = await fetch(`${fe}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "sql-lora", prompt, max_tokens: 4 }) });
    expect(res.status).toBe(200);
    const decodeWorker = res.headers.get("x-kvcr-worker")!;
    expect(await metric(fe, "kvcr_frontend_disagg_legs_total", '{leg="prefill"}')).toBe(before.prefill + 1);
    expect(await metric(fe, "kvcr_frontend_disagg_legs_total", '{leg="decode"}')).toBe(before.decode + 1);
    const h = createBlockHasher();
    const adapter = new Set([...h.sequenceHashes(prompt, 16, undefined, h.seedOf("sql-lora"))].map(String));
    const base = new Set([...h.sequenceHashes(prompt, 16)].map(String));
    type Index = { sources: { worker_id: string; tiers: { device: { seq_hash: string }[] } }[] };
    const holdersOf = (idx: Index, hashes: Set<string>) => idx.sources.filter((s) => s.tiers.device.filter((b) => hashes.has(b.seq_hash)).length === hashes.size).map((s) => s.worker_id);
    let idx: Index | undefined;
    // The prompt's 4 full blocks: on the prefill worker that computed them and the decode worker that pulled them.
    await waitFor(async () => holdersOf((idx = (await (await fetch(`${fe}/v1/index`)).json()) as Index), adapter).length === 2, { timeoutMs: 10_000, what: `the adapter's blocks on two workers of the frontend's index (${JSON.stringify(idx?.sources.map((s) => [s.worker_id, s.tiers.device.length]))})` });
    expect(holdersOf(idx!, adapter)).toContain(decodeWorker);
    expect(holdersOf(idx!, base)).toEqual([]);
  });

  test("a prefill worker killed mid-load costs at most 2 % of the requests", async () => {
    const total = 300;
    let sent = 0;
    let done = 0;
    let failed = 0;
    const errors: string[] = [];
    const worker = async () => {
      while (sent < total) {
        const i = sent++;
        try {
          const res = await fetch(`${fe}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(chat(`load ${i} ${"some context ".repeat(10 + (i % 7))}`)) });
          if (res.status !== 200) {
            failed++;
            errors.push(`${res.status} ${await res.text()}`);
          }
          else await res.json();
        } catch (err) {
          errors.push(String(err));
          failed++;
        }
        done++;
      }
    };
    const p1Before = await metric(p1!.url, "kvcr_mocker_kv_pulled_holds_total");
    const load = Promise.all(Array.from({ length: 8 }, worker));
    await waitFor(() => done >= total / 4, { timeoutMs: 60_000, what: "a quarter of the load done" });
    process.kill(-p0!.pid, "SIGKILL");
    await load;
    expect(pidAlive(p0!.pid)).toBe(false);
    expect(failed / total, errors.slice(0, 5).join("\n")).toBeLessThanOrEqual(0.02);
    // The survivor took the prefill legs after the kill, its KV pulled by the decode workers.
    await waitFor(async () => (await metric(p1!.url, "kvcr_mocker_kv_pulled_holds_total")) - p1Before >= total / 2, { timeoutMs: 10_000, what: "the surviving prefill worker's pulled holds" });
    expect(await metric(fe, "kvcr_frontend_disagg_legs_total", '{leg="decode"}')).toBeGreaterThan(8 + total / 2);
    // up restarts the killed worker; waited for here, so the cleanup knows the new process.
    await waitFor(
      () => {
        const now = (JSON.parse(readFileSync(stateFile, "utf8")) as State).processes.find((p) => p.name === p0!.name);
        return now !== undefined && now.pid !== p0!.pid && pidAlive(now.pid);
      },
      { timeoutMs: 30_000, what: "up to restart the killed prefill worker" },
    );
  });
});
