// Any bench of this project against an earlier revision, alternated on this machine: REV is checked
// out once as a git worktree (cached under ~/.cache/kvcr-mock/against/, with its own `npm ci`), the
// current bench/ directory is copied into it, and the bench runs in turns from each tree (current,
// REV, REV, current, …) so load that comes and goes weighs on both. Each figure the bench reports
// through bench/lib/figures.ts becomes a verdict current / REV: the geometric mean of the pairs'
// ratios with its 95 % t interval (bench/lib/paired-ratio.ts), so a regression shows as a ratio
// whatever the machine. The bench's own code is the same on both sides; what it runs (src/, the
// CLI, the pinned Bun) is each tree's own.
// REV may also be another checkout's directory (an experiment), run as it is with its own bench/.
// Run: bun bench/against.ts REV bench/frontend-throughput.ts [--pairs 3] [--output-json F] [-- bench args]
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { FIGURES_ENV, type Figure } from "./lib/figures.ts";
import { machineLine } from "./lib/machine.ts";
import { pairedRatio, type RatioVerdict } from "./lib/paired-ratio.ts";

const ROOT = dirname(import.meta.dir);
const USAGE = "usage: bun bench/against.ts REV bench/<name>.ts [--pairs N] [--output-json FILE] [-- bench args]";

function fail(message: string): never {
  console.error(`against: ${message}\n${USAGE}`);
  process.exit(2);
}

async function run(cmd: string[], cwd: string, env?: Record<string, string>): Promise<{ code: number; out: string }> {
  const p = Bun.spawn(cmd, { cwd, env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  const code = await p.exited;
  return { code, out: out + err };
}

async function git(...args: string[]): Promise<string> {
  const r = await run(["git", ...args], ROOT);
  if (r.code !== 0) throw new Error(`git ${args.join(" ")}: ${r.out.trim()}`);
  return r.out.trim();
}

/** REV's tree with its own dependencies installed, created on first use and reused after. */
async function revisionTree(sha: string): Promise<string> {
  const dir = join(homedir(), ".cache", "kvcr-mock", "against", sha.slice(0, 12));
  if (!existsSync(join(dir, "package.json"))) {
    await mkdir(dirname(dir), { recursive: true });
    await git("worktree", "prune");
    console.log(`against: checking out ${sha.slice(0, 12)} in ${dir}`);
    await git("worktree", "add", "--detach", "--force", dir, sha);
  }
  if (!existsSync(join(dir, "node_modules"))) {
    console.log(`against: installing ${sha.slice(0, 12)}'s dependencies (npm ci)`);
    const r = await run(["npm", existsSync(join(dir, "package-lock.json")) ? "ci" : "install", "--no-audit", "--no-fund"], dir);
    if (r.code !== 0) {
      await rm(join(dir, "node_modules"), { recursive: true, force: true });
      throw new Error(`npm in ${dir} failed:\n${r.out.trim()}`);
    }
  }
  // The bench itself is the current one on both sides: only the code it measures differs.
  await rm(join(dir, "bench"), { recursive: true, force: true });
  await cp(join(ROOT, "bench"), join(dir, "bench"), { recursive: true });
  return dir;
}

const bunOf = (tree: string): string => {
  const pinned = join(tree, "node_modules", ".bin", "bun");
  return existsSync(pinned) ? pinned : process.execPath;
};

interface Side {
  label: string;
  tree: string;
  runs: Figure[][];
  sha?: string;
}

async function runOnce(side: Side, bench: string, args: readonly string[], scratch: string, index: number, total: number): Promise<void> {
  const file = join(scratch, `figures-${index}.jsonl`);
  console.log(`\n── run ${index + 1} of ${total}: ${side.label} ──`);
  const p = Bun.spawn([bunOf(side.tree), join(side.tree, bench), ...args], { cwd: side.tree, env: { ...process.env, [FIGURES_ENV]: file }, stdin: "ignore", stdout: "inherit", stderr: "inherit" });
  const code = await p.exited;
  if (code !== 0) throw new Error(`${bench} exited with ${code} on ${side.label}`);
  const text = existsSync(file) ? await readFile(file, "utf8") : "";
  const figures = text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Figure);
  if (figures.length === 0) throw new Error(`${bench} reported no figures on ${side.label}: a bench compared this way calls figure() from bench/lib/figures.ts for each figure`);
  side.runs.push(figures);
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const fmt = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));

interface Row {
  name: string;
  unit: string;
  better: Figure["better"];
  current: number[];
  revision: number[];
  verdict: RatioVerdict;
}

function rowsOf(current: Side, revision: Side): { rows: Row[]; missing: string[] } {
  const rows: Row[] = [];
  const missing: string[] = [];
  for (const f of current.runs[0]!) {
    const pick = (s: Side) => s.runs.map((r) => r.find((g) => g.name === f.name)?.value);
    const [a, b] = [pick(current), pick(revision)];
    if (a.some((v) => v === undefined) || b.some((v) => v === undefined)) {
      missing.push(f.name);
      continue;
    }
    const [cur, rev] = [a as number[], b as number[]];
    rows.push({ name: f.name, unit: f.unit, better: f.better, current: cur, revision: rev, verdict: pairedRatio(cur, rev, f.better) });
  }
  return { rows, missing };
}

/** REV: a commit (checked out, the current bench/ copied in), or another checkout's directory, used as it is. */
async function otherSide(rev: string): Promise<Side> {
  if (existsSync(join(rev, "package.json")) && existsSync(join(rev, "src"))) {
    return { label: `tree ${resolve(rev)}`, tree: resolve(rev), runs: [] };
  }
  let sha: string;
  try {
    sha = await git("rev-parse", "--verify", "--quiet", `${rev}^{commit}`);
  } catch {
    fail(`"${rev}" is neither a commit of this repository nor a checkout's directory`);
  }
  return { label: `REV ${await git("rev-parse", "--short", sha)}`, tree: await revisionTree(sha), runs: [], sha };
}

async function main(): Promise<void> {
  const dash = Bun.argv.indexOf("--", 2);
  const own = dash < 0 ? Bun.argv.slice(2) : Bun.argv.slice(2, dash);
  const benchArgs = dash < 0 ? [] : Bun.argv.slice(dash + 1);
  let parsed;
  try {
    parsed = parseArgs({ args: own, allowPositionals: true, options: { pairs: { type: "string", default: "3" }, "output-json": { type: "string" } } });
  } catch (err) {
    fail((err as Error).message);
  }
  const [rev, benchPath, ...extra] = parsed.positionals;
  if (!rev || !benchPath) fail("REV and a bench script are both required");
  if (extra.length) fail(`unexpected argument "${extra[0]}" (bench arguments go after --)`);
  const pairs = Number(parsed.values.pairs);
  if (!Number.isInteger(pairs) || pairs < 2) fail(`--pairs must be an integer ≥ 2 (an interval needs two pairs), got "${parsed.values.pairs}"`);
  const bench = relative(ROOT, resolve(benchPath));
  if (!/^bench\/[^/]+\.ts$/.test(bench) || !existsSync(join(ROOT, bench))) fail(`"${benchPath}" is not a bench script of this project (bench/<name>.ts)`);
  const head = await git("rev-parse", "--short", "HEAD");
  const dirty = (await git("status", "--porcelain", "--untracked-files=no")) !== "";
  const current: Side = { label: `current (${head}${dirty ? " + uncommitted changes" : ""})`, tree: ROOT, runs: [] };
  const revision = await otherSide(rev);
  const scratch = await mkdtemp(join(tmpdir(), "kvcr-against-"));
  try {
    for (let i = 0; i < pairs; i++) {
      // current, REV; REV, current; …: the one that runs second in a pair alternates.
      const order = i % 2 === 0 ? [current, revision] : [revision, current];
      for (const [k, side] of order.entries()) await runOnce(side, bench, benchArgs, scratch, 2 * i + k, 2 * pairs);
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const { rows, missing } = rowsOf(current, revision);
  console.log(`\n${bench}: ${current.label} against ${revision.label}, ${pairs} alternated pairs (median of each side; current / REV with its 95 % interval)`);
  const width = Math.max(...rows.map((r) => r.name.length + r.unit.length + 3));
  for (const r of rows) {
    const v = r.verdict;
    const interval = Number.isFinite(v.low) ? ` [${v.low.toFixed(2)}, ${v.high.toFixed(2)}]` : "";
    console.log(`${`${r.name} (${r.unit})`.padEnd(width)}  ${fmt(median(r.current)).padStart(8)} vs ${fmt(median(r.revision)).padStart(8)}  ${v.ratio.toFixed(2)}×${interval}  ${v.call}`);
  }
  for (const name of missing) console.log(`${name}: not reported by every run of both sides, so not compared`);
  console.log(machineLine("both builds ran in turns on it"));
  if (parsed.values["output-json"]) {
    const report = { bench, current: current.label, revision: { rev, tree: revision.tree, sha: revision.sha }, pairs, figures: rows.map(({ name, unit, better, current, revision, verdict }) => ({ name, unit, better, current, revision, ...verdict })), missing };
    await writeFile(parsed.values["output-json"], JSON.stringify(report, null, 2) + "\n");
  }
}

await main();
