// `kvcr-mock up` from start to exit code: start the stack, print where it is, then run until a
// child exits and is not restarted (--restart no, or past --max-restarts: exit 1, naming it),
// SIGINT/SIGTERM (exit 0), `-- CMD` finishes (CMD's code) or the demo request is answered; the
// stack is stopped on every path. Meanwhile --faults and --audit watch it (stack-watch.ts).
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadSchedule } from "../../config/fault-schedule.ts";
import type { UpConfig } from "../../config/up.ts";
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import { LIFELINE_ENV, untilSignal } from "../../lib/role.ts";
import { readyJsonLine } from "./json-lines.ts";
import { upUnsupportedOn } from "./platform.ts";
import { startStack, type StackDeps, type StackHandle } from "./start.ts";
import { watchStack, type StackWatch } from "./stack-watch.ts";
import { DEFAULT_RESTART_WINDOW_MS, describeExit } from "./supervisor.ts";

export interface UpContext {
  logger: Logger;
  /** The command after `--`, run against the ready stack. */
  rest: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  /** Where the ready summary goes (stdout; stderr when a command owns stdout). */
  print?: (text: string) => void;
  stack?: Partial<StackDeps>;
}

export const DEMO_PROMPT = "Explain KV-cache-aware routing in one sentence.";


export async function runUp(config: UpConfig, ctx: UpContext): Promise<number> {
  const { logger } = ctx;
  const unsupported = upUnsupportedOn(process.platform);
  if (unsupported !== undefined) throw new KvcrError("PLATFORM_UNSUPPORTED", unsupported);
  // Read before anything starts: a bad schedule is a usage error (exit 2).
  const schedule = config.faults !== undefined ? loadSchedule(config.faults, (p) => readFileSync(p, "utf8")) : undefined;
  const t0 = performance.now();
  const signal = untilSignal((sig) => logger.warn(`${sig} again: already stopping the stack`));
  const stateFile = config.stateFile ?? (ctx.rest.length > 0 ? join(tmpdir(), `kvcr-mock-up-${process.pid}.json`) : undefined);
  let stack: StackHandle;
  let watch: StackWatch | undefined;
  try {
    stack = await startStack({ ...config, stateFile }, { logger, env: ctx.env, color: process.stderr.isTTY && !ctx.env.NO_COLOR, cancel: signal, ...ctx.stack });
  } catch (err) {
    if (err instanceof KvcrError && err.code === "STACK_CANCELLED") {
      logger.info(`${await signal}: start-up abandoned, stack stopped`);
      return 0;
    }
    throw err;
  }
  try {
    const print = ctx.print ?? ((text: string) => void (ctx.rest.length > 0 || config.demo ? process.stderr : process.stdout).write(text));
    const elapsedMs = performance.now() - t0;
    print(config.logFormat === "json" ? `${readyJsonLine({ elapsedMs, mode: config.kvStateAgent ? "state-agent" : "direct", model: config.modelName, namespace: stack.namespace, processes: stack.processes, discovery: `${config.discoveryBackend} ${config.discoveryBackend === "etcd" ? config.etcdEndpoints : stack.discoveryDir}`, stateFile, frontendUrl: stack.frontendUrl, frontendUrls: stack.frontendUrls })}\n` : summary(stack, config, stateFile, elapsedMs));
    watch = watchStack(stack, { schedule, auditIntervalS: config.audit ? config.auditInterval : undefined }, logger);
    const failed = stack.failure.then((e) => {
      if (e.restarts !== undefined) {
        const tail = e.stderrTail?.length ? `; its last stderr lines:\n${e.stderrTail.map((l) => `    ${l}`).join("\n")}` : "; it wrote nothing to stderr";
        logger.error(`${e.name} (pid ${e.pid}) ${describeExit(e)} after ${e.restarts} restart(s) within ${DEFAULT_RESTART_WINDOW_MS / 60_000} min (--max-restarts ${config.maxRestarts}): stopping the stack${tail}`);
        return 1;
      }
      logger.error(`${e.name} (pid ${e.pid}) ${describeExit(e)}: stopping the stack`);
      return 1;
    });
    const stopped = signal.then((sig) => {
      logger.info(`${sig}: stopping the stack`);
      return 0;
    });
    if (config.demo) return await Promise.race([demo(stack, config, logger), failed, stopped]);
    if (ctx.rest.length > 0) return await runCommand(ctx.rest, stack, stateFile!, ctx.env, logger, [failed, stopped]);
    return await Promise.race([failed, stopped]);
  } finally {
    await watch?.stop();
    await stack.close();
    logger.info("stack stopped");
  }
}

function summary(stack: StackHandle, config: UpConfig, stateFile: string | undefined, elapsedMs: number): string {
  const lines = [`kvcr-mock stack ready in ${(elapsedMs / 1000).toFixed(1)} s (${config.kvStateAgent ? "state-agent" : "direct"} mode${config.runtime === "dynamo" ? " in a Dynamo deployment" : ""}, model ${config.modelName}, namespace ${stack.namespace})`];
  const width = Math.max(...stack.processes.map((p) => p.name.length), 9);
  const dynamo = config.runtime === "dynamo";
  for (const p of stack.processes) {
    const what =
      p.role === "frontend" ? "OpenAI API: /v1/models /v1/completions /v1/chat/completions /health /metrics"
      : p.role === "agent" ? (dynamo ? "Dynamo's state agent: /live /health /metrics" : "/live /health /v1/slots /v1/snapshot /metrics")
      : p.role === "nats" ? "NATS server of the frontends' router replica sync"
      : dynamo ? "Dynamo workers (TCP request plane): /live /health /metrics"
      : `/v1/generate /health /metrics; raw KV events: ${rawText(p.rawEndpoints)}`;
    lines.push(`  ${p.name.padEnd(width)} ${p.url}  pid ${p.pid}${p.external ? " (external)" : ""}  ${what}`);
    if (p.workerApiUrls) lines.push(`  ${"".padEnd(width)} worker API (vLLM's OpenAI server per worker): ${workerApiText(p.workerApiUrls)}`);
  }
  lines.push(`  ${"discovery".padEnd(width)} ${config.discoveryBackend} ${config.discoveryBackend === "etcd" ? config.etcdEndpoints : stack.discoveryDir}`);
  if (stateFile) lines.push(`  ${"state".padEnd(width)} ${stateFile}`);
  if (stack.frontendUrl) {
    const body = JSON.stringify({ model: config.modelName, messages: [{ role: "user", content: "Hello!" }], max_tokens: 16 });
    lines.push("try:", `  curl -s ${stack.frontendUrl}/v1/chat/completions -H 'Content-Type: application/json' -d '${body}'`);
  }
  return lines.join("\n") + "\n";
}

function rawText(raw: string[][] | undefined): string {
  const all = raw?.flat() ?? [];
  if (all.length === 0) return "(see the workers' discovery records)";
  return all.length <= 4 ? all.join(" ") : `${all.slice(0, 4).join(" ")} … (${all.length} in all, listed in the state file)`;
}

/**
 * Every worker's API URL: listed while short; as one range when the ports run on from the first
 * (`http://h:{30000–30255}`, worker i on 30000 + i), as a mocker's port plan usually takes them.
 */
export function workerApiText(urls: readonly string[]): string {
  const parsed = urls.map((u) => /^(.*):(\d+)$/.exec(u));
  const base = parsed[0];
  const consecutive = base && parsed.every((m, i) => m && m[1] === base[1] && Number(m[2]) === Number(base[2]) + i);
  if (urls.length <= 4 || !consecutive) return urls.join(" ");
  const first = Number(base[2]);
  return `${base[1]}:{${first}–${first + urls.length - 1}} (${urls.length} workers: worker i on ${first} + i)`;
}

/** `up -- CMD…`: CMD runs against the ready stack; its exit code is up's. */
async function runCommand(argv: readonly string[], stack: StackHandle, stateFile: string, env: Readonly<Record<string, string | undefined>>, logger: Logger, ends: Promise<number>[]): Promise<number> {
  const { [LIFELINE_ENV]: _lifeline, ...inherited } = env;
  let proc: Bun.Subprocess;
  try {
    proc = Bun.spawn([...argv], {
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
      env: { ...inherited, KVCR_FRONTEND_URL: stack.frontendUrl ?? "", KVCR_FRONTEND_URLS: stack.frontendUrls.join(","), KVCR_AGENT_URL: stack.agentUrl ?? "", KVCR_STATE_FILE: stateFile },
    });
  } catch (err) {
    throw new KvcrError("SPAWN_FAILED", `cannot run ${argv[0]}: ${(err as Error).message}`);
  }
  const done = proc.exited.then((code) => {
    logger.info(`${argv[0]} ${proc.signalCode ? `was killed by ${proc.signalCode}` : `exited with code ${code}`}`);
    return proc.signalCode ? 128 + (signalNumber(String(proc.signalCode)) ?? 0) : code;
  });
  const code = await Promise.race([done, ...ends]);
  if (proc.exitCode === null && proc.signalCode === null) {
    proc.kill("SIGTERM");
    await proc.exited;
    return code === 0 ? 0 : code; // stack failure (1) or a signal to up (0)
  }
  return code;
}

function signalNumber(sig: string): number | undefined {
  const table: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGSEGV: 11, SIGPIPE: 13, SIGTERM: 15 };
  return table[sig];
}

/** `up --demo`: the same chat request twice through the frontend (the second reuses the first's KV blocks), printed, then stop. */
async function demo(stack: StackHandle, config: UpConfig, logger: Logger): Promise<number> {
  if (!stack.frontendUrl) throw new KvcrError("DEMO_NEEDS_FRONTEND", "--demo sends requests through the frontend: include frontend in --roles");
  const url = `${stack.frontendUrl}/v1/chat/completions`;
  const body = JSON.stringify({ model: config.modelName, messages: [{ role: "system", content: DEMO_SYSTEM }, { role: "user", content: DEMO_PROMPT }], max_tokens: 24 });
  process.stdout.write(`demo: POST ${url} twice (model ${config.modelName}): ${JSON.stringify(DEMO_PROMPT)}\n`);
  for (const attempt of [1, 2]) {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(60_000) });
    const text = await res.text();
    if (res.status !== 200) {
      logger.error(`demo request ${attempt} failed: HTTP ${res.status} ${text.slice(0, 300)}`);
      return 1;
    }
    const reply = JSON.parse(text) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } };
    const u = reply.usage;
    process.stdout.write(
      `  #${attempt}: HTTP 200, ${u.completion_tokens} tokens (${reply.choices[0]?.finish_reason}): ${JSON.stringify(reply.choices[0]?.message.content)}\n` +
        `      prompt ${u.prompt_tokens} tokens, ${u.prompt_tokens_details?.cached_tokens ?? 0} of them served from the KV cache\n`,
    );
    // The first prompt's KV events travel mocker → agent → router asynchronously: let them land
    // (a few ms; at most 5 s) so the repeat shows what KV-aware routing does with them.
    if (attempt === 1) await untilIndexed(stack.frontendUrl, Math.floor(u.prompt_tokens / config.blockSize), 5_000);
  }
  return 0;
}

/** Polls the frontend's router index size (its /metrics) until it holds `blocks` device blocks, or gives up quietly. */
async function untilIndexed(frontendUrl: string, blocks: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const text = await fetch(`${frontendUrl}/metrics`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.text(), () => "");
    const indexed = Number(/^kvcr_frontend_index_blocks\{tier="device"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    if (indexed >= blocks) return;
    await Bun.sleep(25);
  }
}

const DEMO_SYSTEM =
  "You are a mock model served by kvcr-mock: a GPU-free copy of a KV-cache-aware serving stack. Each mock worker keeps " +
  "prefix-cached KV blocks on a GPU tier and a host tier and publishes its KV events over ZeroMQ in vLLM's format; the " +
  "state agent turns them into router events, and the frontend's KV router sends each request to the worker that already " +
  "holds the longest prefix of its prompt, so a repeated prompt is served mostly from cache.";
