// `kvcr-mock up` from the compiled binary (its children are the binary itself): the real agent,
// mockers and frontend answer the official `openai` client; raw G2 stores carry ownership kvcr on
// CPU_PINNED; SIGINT stops everything; and the failure paths a user meets from the binary.
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { allGone, pidAlive, runCli, spawnProcess, tempDir, waitFor, type ChildProcess } from "../harness.ts";
import { compiledBinary } from "./compiled.ts";

let bin: string;
beforeAll(async () => {
  bin = await compiledBinary();
}, 120_000);

let dir: ReturnType<typeof tempDir>;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  dir?.[Symbol.dispose]();
});

interface State {
  frontend_url: string;
  agent_url: string | null;
  processes: { name: string; pid: number; url: string; raw_endpoints?: string[][]; replay_endpoints?: string[][] }[];
}

function args(extra: string[] = []): string[] {
  dir = tempDir("kvcr-up-bin-");
  return ["--discovery-dir", join(dir.path, "discovery"), "--agent-port", "0", "--http-port", "0", "--state-file", join(dir.path, "state.json"), "--log-level", "warn", ...extra];
}

async function upReady(argv: string[]): Promise<{ up: ChildProcess; state: State }> {
  const up = spawnProcess([bin, "up", ...argv], { cwd: dir.path });
  cleanups.push(async () => void (await up[Symbol.asyncDispose]()));
  await up.readLine((l) => l.startsWith("kvcr-mock stack ready"), 60_000);
  const state = JSON.parse(readFileSync(join(dir.path, "state.json"), "utf8")) as State;
  cleanups.push(async () => {
    for (const p of state.processes) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
  });
  return { up, state };
}


/** A prompt long enough to fill several 16-token blocks, distinct per `i` after a shared prefix. */
const prompt = (i: number) => `${"the shared system prompt of this benchmark run ".repeat(12)} question ${i}: ${"why ".repeat(20 + i)}`;

describe("kvcr-mock up from the compiled binary", () => {
  test("agent + 2 mocker processes × 2 workers + frontend: openai client served, raw G2 stores kvcr/CPU_PINNED on the wire, SIGINT stops all with exit 0", async () => {
    const { up, state } = await upReady(args(["--mocker-processes", "2", "--workers-per-process", "2", "--block-size", "16", "--num-gpu-blocks-override", "64", "--zmq-replay-ports", "0", "--speedup-ratio", "0"]));
    expect(state.processes.map((p) => p.name)).toEqual(["agent", "mocker-0", "mocker-1", "frontend"]);
    // Children run the binary itself, never a path inside the bundle.
    for (const p of state.processes) expect(readFileSync(`/proc/${p.pid}/cmdline`, "utf8").split("\0")[0]).toBe(bin);

    const client = new OpenAI({ baseURL: `${state.frontend_url}/v1`, apiKey: "unused", maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(["mock-model"]);
    for (let i = 0; i < 8; i++) {
      const chat = await client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: prompt(i) }], max_tokens: 8 });
      expect(chat.choices[0]!.message.content!.length).toBeGreaterThan(0);
      expect(chat.usage!.completion_tokens).toBe(8);
    }
    const again = await client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: prompt(0) }], max_tokens: 4 });
    expect(again.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0); // the KV router found its prefix
    const stream = await client.completions.create({ model: "mock-model", prompt: prompt(1), max_tokens: 5, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    expect(text.length).toBeGreaterThan(0);

    // Every worker's raw stream, read back from its replay socket by the binary's own `events` tap,
    // up to the count of batches its mocker says it published.
    const mockers = state.processes.filter((p) => p.name.startsWith("mocker"));
    const taps = await Promise.all(
      mockers.flatMap((m) =>
        m.raw_endpoints!.map(async (raw, w) => {
          const metrics = await (await fetch(`${m.url}/metrics`)).text();
          // Samples come in worker order; the label is the worker id.
          const published = Number([...metrics.matchAll(/^kvcr_mocker_raw_batches_published_total\{worker="[^"]*",dp_rank="0"\} (\d+)$/gm)][w]![1]);
          if (published === 0) return []; // a worker the router never picked
          const tap = spawnProcess([bin, "events", "--endpoint", raw[0]!, "--replay", m.replay_endpoints![w]![0]!, "--from-seq", "0", "--log-level", "error"]);
          try {
            await tap.readLine((l) => (JSON.parse(l) as { seq?: number }).seq === published - 1, 20_000);
            return tap.stdoutText().trim().split("\n").map((l) => JSON.parse(l) as { events?: { type: string; medium?: string; ownership?: string }[] });
          } finally {
            await tap[Symbol.asyncDispose]();
          }
        }),
      ),
    );
    expect(taps).toHaveLength(4);
    const g2 = taps.flat().flatMap((l) => (l.events ?? []).filter((e) => e.type === "BlockStored" && e.medium !== "GPU"));
    expect(g2.length).toBeGreaterThan(0);
    expect(g2.every((e) => e.medium === "CPU_PINNED" && e.ownership === "kvcr")).toBe(true);
    const slots = (await (await fetch(`${state.agent_url}/v1/slots`)).json()) as { state: string }[];
    expect(slots.map((s) => s.state)).toEqual(["active", "active", "active", "active"]);

    up.proc.kill("SIGINT");
    expect(await up.proc.exited).toBe(0);
    await allGone(state.processes.map((p) => p.pid));
  }, 90_000);

  test("the README's main job: up --demo serves a chat request twice, the second from the KV cache, and exits 0", async () => {
    const r = await runCli(["up", "--demo", ...args()], { bin, cwd: dir.path, timeoutMs: 60_000 });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/#1: HTTP 200, 24 tokens/);
    expect(r.stdout).toMatch(/#2: HTTP 200, 24 tokens .*\n\s+prompt (\d+) tokens, [1-9]\d* of them served from the KV cache/);
  }, 60_000);

  test("an agent that never becomes live: up fails within the timeout and no mocker was started", async () => {
    const r = await runCli(["up", ...args(["--agent-cmd", "sleep 30", "--agent-ready-timeout", "1.5", "--log-level", "info"])], { bin, cwd: dir.path, timeoutMs: 30_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/agent did not become ready within 1\.5 s .*last probe: GET http:\/\/127\.0\.0\.1:\d+\/live: (ConnectionRefused|ECONNREFUSED|.*refused)/i);
    expect(r.stderr).not.toContain("mocker-0");
  }, 30_000);

  test("--restart no: a mocker killed after readiness stops the stack, up exiting 1 naming it", async () => {
    const { up, state } = await upReady(args(["--restart", "no"]));
    const mocker = state.processes.find((p) => p.name === "mocker-0")!;
    process.kill(mocker.pid, "SIGKILL");
    expect(await up.proc.exited).toBe(1);
    expect(up.stderrText()).toContain(`mocker-0 (pid ${mocker.pid}) was killed by SIGKILL`);
    await allGone(state.processes.map((p) => p.pid));
  }, 60_000);

  test("up SIGKILLed: no child survives (checked by pid)", async () => {
    const { up, state } = await upReady(args(["--mocker-processes", "2"]));
    process.kill(up.proc.pid, "SIGKILL");
    await up.proc.exited;
    await allGone(state.processes.map((p) => p.pid));
  }, 60_000);

  test("start-up errors fail fast naming the cause (a port in use: exit 1, a bad stack config: exit 2)", async () => {
    await using busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") }) as unknown as AsyncDisposable & { port: number };
    const inUse = await runCli(["up", ...args(), "--agent-port", String(busy.port)], { bin, cwd: dir.path });
    expect(inUse.exitCode).toBe(1);
    expect(inUse.stderr).toContain(`port ${busy.port} for agent (--agent-port) is already in use on 127.0.0.1`);
    const file = join(dir.path, "stack.yaml");
    writeFileSync(file, "stack:\n  mocker_processes: 2\nfrontend:\n  router_mode: best\nmockers:\n  agent_port: 1\n");
    const bad = await runCli(["up", "--config", file], { bin, cwd: dir.path });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.trim().split("\n").slice(1)).toEqual([
      `  mockers.agent_port (in ${file}): unknown key for the mockers section`,
      `  frontend.router_mode (in ${file}): got "best", expected one of kv, round-robin, random`,
    ]);
  }, 30_000);
});
