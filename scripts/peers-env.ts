// Builds the peers environment (Dynamo 1.6.1, sglang-router, vllm-router, aiperf, aiconfigurator)
// as one cached venv, wheels only, and prints its Python on stdout. A second run finds it and only
// prints. Exit 75 (EX_TEMPFAIL) means the package registry could not be reached; any other failure
// names the package, version or check that failed. Where it lives: scripts/lib/peers.ts.
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { gpuPackages, PeersError, pipFailure } from "./lib/peers-install.ts";
import { AI_DYNAMO, CONSTRAINTS, findPeersPython, peersStamp, peersVenvDir, REQUIREMENTS } from "./lib/peers.ts";

/** What the peers must be at, read back from the venv after the install. */
const PINNED: Record<string, string> = {
  "ai-dynamo": "1.6.1", "ai-dynamo-runtime": "1.6.1", "sglang-router": "0.3.2", "vllm-router": "0.1.17",
  "aiperf": "0.13.0", "aiconfigurator": "0.12.0",
};
function log(line: string): void {
  process.stderr.write(`peers-env: ${line}\n`);
}

function run(argv: string[], env: Record<string, string | undefined> = process.env): { code: number; out: string } {
  const r = Bun.spawnSync(argv, { env, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? 1, out: `${r.stdout.toString()}${r.stderr.toString()}` };
}

/** A Python 3.11–3.13 to make the venv from (ai-dynamo's wheels cover those). */
function basePython(): string {
  const chosen = process.env.KVCR_PEERS_BASE_PYTHON;
  const candidates = chosen ? [chosen] : ["python3.11", "python3.12", "python3.13", "python3"];
  const tried: string[] = [];
  for (const name of candidates) {
    const path = Bun.which(name) ?? (existsSync(name) ? name : undefined);
    if (!path) { tried.push(`${name} (not found)`); continue; }
    const v = run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]);
    const version = v.out.trim();
    if (v.code === 0 && /^3\.(11|12|13)$/.test(version)) return path;
    tried.push(`${name} (${version || "does not run"})`);
  }
  throw new PeersError(`no Python 3.11–3.13 to build the peers environment from; tried ${tried.join(", ")}. Install one, or set KVCR_PEERS_BASE_PYTHON`);
}

function pip(python: string, args: string[]): void {
  const r = run([python, "-m", "pip", "--disable-pip-version-check", "--no-input", ...args], { ...process.env, PIP_FIND_LINKS: undefined });
  if (r.code !== 0) throw pipFailure(r.out);
}

/** The installed set: every peer at its pin, no GPU package. */
function verify(python: string): Record<string, string> {
  const r = run([python, "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"]);
  if (r.code !== 0) throw new PeersError(`pip list failed in the new environment:\n${r.out}`);
  const installed = new Map((JSON.parse(r.out) as { name: string; version: string }[]).map((p) => [p.name.toLowerCase(), p.version]));
  const gpu = gpuPackages(installed);
  if (gpu.length > 0) {
    throw new PeersError(`the resolution pulled a GPU build: ${gpu.map(([n, v]) => `${n}==${v}`).join(", ")}; pin a CPU wheel in scripts/peers/constraints.txt`);
  }
  for (const [name, version] of Object.entries(PINNED)) {
    const got = installed.get(name);
    if (got !== version) throw new PeersError(`${name} is ${got ?? "not installed"} in the new environment, pinned ${version}`);
  }
  const imports = run([python, "-c", "import dynamo.frontend, dynamo.mocker, dynamo.kv_state_agent, dynamo.llm, aiperf, sglang_router, vllm_router, aiconfigurator, tokenizers, transformers, zmq, msgspec"]);
  if (imports.code !== 0) throw new PeersError(`a peer does not import in the new environment:\n${imports.out.split("\n").slice(-6).join("\n")}`);
  return Object.fromEntries(Object.keys(PINNED).map((n) => [n, installed.get(n)!]));
}

function duBytes(dir: string): number {
  const r = run(["du", "-sb", dir]);
  return Number.parseInt(r.out, 10) || 0;
}

function build(): string {
  const venv = peersVenvDir();
  const python = join(venv, "bin/python");
  const started = performance.now();
  rmSync(venv, { recursive: true, force: true }); // half-built (no stamp): start over
  mkdirSync(dirname(venv), { recursive: true });
  const base = basePython();
  log(`building ${venv} from ${base}`);
  const made = run([base, "-m", "venv", venv]);
  if (made.code !== 0) throw new PeersError(`${base} -m venv failed:\n${made.out}`);
  try {
    pip(python, ["install", "-q", "--upgrade", "pip"]);
    pip(python, ["install", "-q", "--only-binary=:all:", "-r", REQUIREMENTS, "-c", CONSTRAINTS]);
    pip(python, ["install", "-q", "--only-binary=:all:", "--no-deps", AI_DYNAMO]);
    const versions = verify(python);
    const seconds = Math.round((performance.now() - started) / 1000);
    writeFileSync(peersStamp(venv), `${JSON.stringify({ versions, seconds, bytes: duBytes(venv), python: base }, null, 1)}\n`);
    log(`built in ${seconds} s: ${Object.entries(versions).map(([n, v]) => `${n} ${v}`).join(", ")}`);
  } catch (err) {
    rmSync(venv, { recursive: true, force: true });
    throw err;
  }
  return python;
}

try {
  const rebuild = process.argv.includes("--rebuild");
  const found = rebuild ? undefined : findPeersPython();
  if (found && process.env.KVCR_PEERS_PYTHON) log(`KVCR_PEERS_PYTHON is set; using ${found}`);
  console.log(found ?? build());
} catch (err) {
  const e = err instanceof PeersError ? err : new PeersError(String((err as Error).stack ?? err));
  log(e.message);
  process.exit(e.exitCode);
}
