// A worker killed under load (compiled binary, `up` with 4 mocker processes × 1 worker, round-robin):
// a steady stream of short streamed requests while one mocker is SIGKILLed. Requests sent after the
// kill are retried away from it (at most 1 % fail), none fail once it is out of routing, and only
// requests on the killed worker ever fail; with --migration-limit 1 even its cut streams finish.
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pidAlive, spawnProcess, tempDir, waitFor, type ChildProcess } from "../harness.ts";
import { compiledBinary } from "./compiled.ts";

let bin: string;
beforeAll(async () => {
  bin = await compiledBinary();
}, 120_000);

let dir: ReturnType<typeof tempDir> | undefined;
let up: ChildProcess | undefined;
let pids: number[] = [];
afterEach(async () => {
  await up?.[Symbol.asyncDispose]();
  for (const pid of pids) if (pidAlive(pid)) process.kill(pid, "SIGKILL");
  dir?.[Symbol.dispose]();
  [up, dir, pids] = [undefined, undefined, []];
});

interface State {
  frontend_url: string;
  processes: { name: string; pid: number }[];
}

interface Sent {
  index: number;
  /** The victim was already out of routing (seen on /metrics) when this request was sent. */
  afterOut: boolean;
  afterKill: boolean;
  done?: { ok: boolean; worker: string | null; text: string };
}

const PROMPT_TOKENS = 48;
const MAX_TOKENS = 40;

/**
 * One streamed completion; ok when it ends with [DONE], carries no error event, has exactly one
 * text chunk per token (no gap, no duplicate: a migrated stream must still count MAX_TOKENS) and a
 * usage of the original prompt and every token.
 */
async function stream(url: string, i: number): Promise<Sent["done"]> {
  // Distinct prompts of 3 full blocks, so each in-flight request shows as active blocks on its worker.
  const prompt = Array.from({ length: PROMPT_TOKENS }, (_, k) => 1000 + i * 64 + k);
  try {
    const res = await fetch(`${url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "mock-model", prompt, max_tokens: MAX_TOKENS, stream: true, stream_options: { include_usage: true } }),
    });
    const text = await res.text();
    const events = text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)) as { choices?: { text?: string }[]; usage?: { prompt_tokens: number; completion_tokens: number } | null });
    const tokenChunks = events.filter((e) => (e.choices?.[0]?.text ?? "") !== "").length;
    const usage = events.find((e) => e.usage)?.usage;
    const whole = tokenChunks === MAX_TOKENS && usage?.prompt_tokens === PROMPT_TOKENS && usage?.completion_tokens === MAX_TOKENS;
    return { ok: res.status === 200 && text.endsWith("data: [DONE]\n\n") && !text.includes('"error"') && whole, worker: res.headers.get("x-kvcr-worker"), text };
  } catch (err) {
    return { ok: false, worker: null, text: String(err) };
  }
}

const metric = (text: string, name: string, labels = "") => {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
};

describe("a worker killed under load (compiled binary)", () => {
  for (const migrationLimit of [0, 1]) {
    test(`--migration-limit ${migrationLimit}: retried away from the dead worker, nothing fails once it is out${migrationLimit ? ", cut streams migrate" : ""}`, async () => {
      dir = tempDir("kvcr-worker-failure-");
      const stateFile = join(dir.path, "state.json");
      up = spawnProcess(
        [bin, "up", "--mocker-processes", "4", "--workers-per-process", "1", "--router-mode", "round-robin", "--http-port", "0", "--agent-port", "0",
          "--block-size", "16", "--num-gpu-blocks-override", "256", "--timing-model", "fixed", "--prefill-ms", "5", "--decode-ms", "20",
          // The killed mocker stays dead for the whole test (up would restart it after the backoff).
          "--restart-backoff", "3600", "--migration-limit", String(migrationLimit),
          "--discovery-dir", join(dir.path, "discovery"), "--state-file", stateFile, "--log-level", "error"],
        { cwd: dir.path },
      );
      await up.readLine((l) => l.startsWith("kvcr-mock stack ready"), 60_000);
      const state = JSON.parse(readFileSync(stateFile, "utf8")) as State;
      pids = state.processes.map((p) => p.pid);
      const url = state.frontend_url;
      // State-agent mode names mocker-i's only worker by its CacheOwner ordinal i.
      const victim = { pid: state.processes.find((p) => p.name === "mocker-2")!.pid, worker: "kvcr-slot-2" };
      const metrics = async () => (await fetch(`${url}/metrics`)).text();
      const victimBlocks = (text: string) => metric(text, "dynamo_frontend_worker_active_decode_blocks", `{dp_rank="0",worker_id="${victim.worker}",worker_type="decode"}`);

      // Steady load: one request every 50 ms (20 req/s) until told to stop.
      const sent: Sent[] = [];
      const phase = { killed: false, out: false, stop: false };
      const pending: Promise<void>[] = [];
      const load = (async () => {
        while (!phase.stop) {
          const s: Sent = { index: sent.length, afterKill: phase.killed, afterOut: phase.out };
          sent.push(s);
          pending.push(stream(url, s.index).then((d) => void (s.done = d)));
          await Bun.sleep(50);
        }
      })();

      try {
        // Kill while the victim has requests in flight, so some streams are cut mid-way.
        await waitFor(async () => sent.length >= 20 && (victimBlocks(await metrics()) ?? 0) > 0, { what: "requests in flight on the victim", timeoutMs: 20_000 });
        process.kill(victim.pid, "SIGKILL");
        phase.killed = true;
        const killedAt = sent.length;
        // Out of routing: ejected (its connection failed) or its discovery record gone.
        await waitFor(async () => {
          const text = await metrics();
          return (metric(text, "kvcr_frontend_ejected_workers") ?? 0) > 0 || victimBlocks(text) === undefined;
        }, { what: "the killed worker out of routing", timeoutMs: 20_000 });
        phase.out = true;
        const outAt = sent.length;
        await waitFor(() => sent.length - killedAt >= 100 && sent.length - outAt >= 40, { what: "100 requests after the kill", timeoutMs: 30_000 });
      } finally {
        phase.stop = true;
        await load;
        await Promise.all(pending);
      }

      const failed = sent.filter((s) => !s.done!.ok);
      const afterKill = sent.filter((s) => s.afterKill);
      const why = failed.map((s) => `#${s.index} ${s.done!.worker}: ${s.done!.text.slice(-300)}`).join("\n");
      expect(failed.filter((s) => s.afterKill).length, why).toBeLessThanOrEqual(Math.floor(afterKill.length / 100));
      expect(failed.filter((s) => s.afterOut), why).toEqual([]);
      // Only requests on the killed worker fail (a streamed one names it in its header, a refused one in its error).
      for (const s of failed) expect(s.done!.worker === victim.worker || s.done!.text.includes(victim.worker), why).toBe(true);
      if (migrationLimit > 0) {
        expect(failed, why).toEqual([]);
        const migrated = metric(await metrics(), "dynamo_frontend_model_migration_total", '{migration_type="ongoing_request",model="mock-model"}');
        expect(migrated).toBeGreaterThanOrEqual(1);
      }
    }, 60_000);
  }
});
