// A stack of kvcr-mock workers behind a router from a shipped stack file (the peers tests of the
// routers): `up` started with a state file, its output kept for failure messages; chat requests
// through the router, naming the worker that served each and its cached tokens; a clean stop.
import { expect } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { CLI_ENTRY, pipeOutput, spawnChild, waitFor, withTimeout, type SpawnedChild } from "../harness.ts";
import { PEERS_PYTHON } from "../peers.ts";

export const EXAMPLES = join(import.meta.dir, "../../examples");
export const MODEL = "mock-model";

export interface State {
  frontend_url: string;
  processes: { name: string; pid: number; url: string; worker_api_urls?: string[]; ports?: Record<string, number | number[]> }[];
}

export interface Stack {
  state: State;
  up: SpawnedChild;
  output: () => string;
}

/** The example's router command with another policy (the flag overrides the file's). */
export function withPolicy(example: string, policy: string): string {
  const cmd = (parse(readFileSync(join(EXAMPLES, example), "utf8")) as { stack: { frontend_cmd: string } }).stack.frontend_cmd;
  return cmd.replace(/--policy \S+/, `--policy ${policy}`);
}

export async function startStack(dir: string, args: string[], cleanups: AsyncDisposableStack): Promise<Stack> {
  const stateFile = join(dir, `state-${Math.random().toString(36).slice(2)}.json`);
  const up = cleanups.use(spawnChild([process.execPath, CLI_ENTRY, "up", "--http-port", "0", "--state-file", stateFile, "--grace-period", "5", ...args], { env: { TMPDIR: dir, KVCR_PEERS_PYTHON: PEERS_PYTHON! } }));
  let out = "";
  pipeOutput(up, (t) => (out += t));
  await waitFor(() => existsSync(stateFile) || up.proc.exitCode !== null, { what: "the stack to be ready", timeoutMs: 60_000 });
  if (!existsSync(stateFile)) throw new Error(`up exited ${up.proc.exitCode} before the stack was ready:\n${out.slice(-3000)}`);
  return { state: JSON.parse(readFileSync(stateFile, "utf8")) as State, up, output: () => out };
}

export interface Served {
  worker: string;
  /** The data-parallel rank that served it (x-kvcr-dp-rank). */
  rank: string;
  prompt: number;
  cached: number;
}

export async function chat(stack: Stack, content: string, headers: Record<string, string> = {}): Promise<Served> {
  const res = await fetch(`${stack.state.frontend_url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content }], max_tokens: 2 }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`chat: HTTP ${res.status} ${text.slice(0, 300)}\n${stack.output().slice(-2000)}`);
  const usage = (JSON.parse(text) as { usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } }).usage;
  return { worker: res.headers.get("x-kvcr-worker") ?? "?", rank: res.headers.get("x-kvcr-dp-rank") ?? "?", prompt: usage.prompt_tokens, cached: usage.prompt_tokens_details?.cached_tokens ?? 0 };
}

export async function stop(stack: Stack): Promise<void> {
  stack.up.proc.kill("SIGTERM");
  expect(await withTimeout(stack.up.proc.exited, 30_000, "up to stop")).toBe(0);
}

/** A counter's value on a mocker's /metrics, summed over its series. */
export async function metricSum(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}
