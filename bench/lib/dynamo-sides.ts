// What the side-by-side benches against Dynamo share (bench/fidelity-*.ts): the peers' Python
// with the pinned Dynamo (another version is named, not measured), `up` stack files for both sides
// written from one settings object (so the settings cannot drift apart), and `kvcr-mock bench`
// run as a user runs it, a failed side ending the comparison with the command and its log tail.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DYNAMO_VERSION, findPeersPython, PEERS_HINT } from "../../scripts/lib/peers.ts";

export const ROOT = resolve(import.meta.dir, "../..");
export const CLI = join(ROOT, "src/cli.ts");
export const TRACE = join(ROOT, "traces/mooncake_conversation_trace.jsonl");

/** The script's rounds argument (argv[2]), at least `min`. */
export function roundsArg(min = 2): number {
  const rounds = Number(process.argv[2] ?? "3");
  if (!Number.isInteger(rounds) || rounds < min) throw new Error(`rounds: got ${JSON.stringify(process.argv[2])}, expected an integer of at least ${min}`);
  return rounds;
}

/** The peers' Python, once its Dynamo is the pinned one. */
export function pinnedPeersPython(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const python = findPeersPython(env);
  if (python === undefined) throw new Error(`no peers environment: ${PEERS_HINT}`);
  const probe = Bun.spawnSync([python, "-c", "import importlib.metadata as m; print(m.version('ai-dynamo'), m.version('ai-dynamo-runtime'))"]);
  const versions = probe.stdout.toString().trim().split(" ");
  if (probe.exitCode !== 0) throw new Error(`${python}: cannot read Dynamo's version:\n${probe.stderr.toString().slice(-1500)}`);
  if (versions.some((v) => v !== DYNAMO_VERSION)) throw new Error(`${python} has ai-dynamo ${versions[0]} / ai-dynamo-runtime ${versions[1]}, not the pinned ${DYNAMO_VERSION}: these figures are against ${DYNAMO_VERSION} (rebuild with \`bun scripts/peers-env.ts\`)`);
  return python;
}

/** Dynamo's own mocker as up runs it for a stack: the stack's engine settings through {engine_args}. */
export const DYNAMO_MOCKER_CMD =
  "{peers_python} -m dynamo.mocker --model-path {model_path} --model-name {model} --num-workers {workers} --endpoint dyn://{namespace}.backend.generate " +
  "--discovery-backend {discovery_backend} --request-plane tcp --event-plane zmq {engine_args}";

export type Side =
  /** Dynamo's frontend over kvcr-mock's `mocker --runtime dynamo`. */
  | "dynamo-frontend/kvcr-mock-mocker"
  /** Dynamo's frontend over Dynamo's own mocker. */
  | "dynamo-frontend/dynamo-mocker"
  /** kvcr-mock's frontend over kvcr-mock's mockers. */
  | "kvcr-mock-frontend/kvcr-mock-mocker";

export interface StackSettings {
  workers: number;
  routerMode: "kv" | "round-robin";
  /** The engine settings, as the stack file's mockers section spells them (snake_case). */
  engine: Record<string, string | number | boolean>;
}

/** Writes the stack file of `side` into `dir`; returns its path. */
export function writeStackFile(dir: string, name: string, side: Side, s: StackSettings): string {
  const yaml = (o: Record<string, unknown>) => Object.entries(o).map(([k, v]) => `  ${k}: ${typeof v === "string" && /[{}:#]/.test(v) ? JSON.stringify(v) : String(v)}`).join("\n");
  const stack: Record<string, unknown> = { model_name: "mock-model", kv_state_agent: false, mocker_processes: 1, workers_per_process: s.workers };
  if (side === "dynamo-frontend/dynamo-mocker") stack.mocker_cmd = DYNAMO_MOCKER_CMD;
  const mockers = { ...(side === "kvcr-mock-frontend/kvcr-mock-mocker" ? {} : { runtime: "dynamo" }), ...s.engine };
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, `# ${side}\nstack:\n${yaml(stack)}\nmockers:\n${yaml(mockers)}\nfrontend:\n${yaml({ router_mode: s.routerMode })}\n`);
  return path;
}

export interface BenchRun {
  label: string;
  round: number;
  completed: number;
  failed: number;
  error_breakdown?: Record<string, number>;
  [key: string]: unknown;
}

/** `kvcr-mock bench ARGV --output-json FILE`, its terminal output printed from the verdict to the end of `rows`; every request of every run must complete. */
export async function runBench(argv: string[], out: string, env: Record<string, string | undefined>, rows: readonly string[]): Promise<{ runs: BenchRun[]; verdict: { metric: string; side: string; ratio: number; ci_low?: number; ci_high?: number; call: string }[] }> {
  const full = [process.execPath, CLI, "bench", ...argv, "--output-json", out, "--log-level", "warn"];
  console.log(`$ kvcr-mock bench ${argv.join(" ").replaceAll(ROOT + "/", "")}`);
  const child = Bun.spawn(full, { stdout: "pipe", stderr: "pipe", env });
  const [text, err, code] = [await new Response(child.stdout).text(), await new Response(child.stderr).text(), await child.exited];
  if (code !== 0) throw new Error(`bench exited ${code}: ${full.join(" ")}\n${err.slice(-4000)}`);
  const lines = text.split("\n");
  console.log(text.slice(0, text.indexOf("\n\n")));
  const header = lines.findIndex((l) => l.startsWith("---"));
  for (const row of [lines[header - 1], lines[header], ...rows.map((r) => lines.find((l) => l.startsWith(r)))]) console.log(row ?? "");
  const doc = JSON.parse(await Bun.file(out).text()) as { runs: BenchRun[]; verdict: never[] };
  const short = doc.runs.filter((r) => r.failed > 0 || r.completed === 0);
  if (short.length > 0) throw new Error(`requests failed, so no comparison: ${short.map((r) => `${r.label} round ${r.round}: ${r.failed} failed ${JSON.stringify(r.error_breakdown ?? {})}`).join("; ")}\n${err.slice(-3000)}`);
  return doc;
}

export const ROWS = ["request throughput", "output throughput", "prefix cache reuse ratio", "mean TTFT (ms)", "p90 TTFT (ms)", "mean ITL (ms)", "p90 ITL (ms)", "mean E2EL (ms)", "p90 E2EL (ms)"] as const;
