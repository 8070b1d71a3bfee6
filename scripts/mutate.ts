// The mutation check: does any test notice when a line of a source file breaks? For each file,
// targeted mutants (scripts/lib/mutants.ts) are applied one at a time to a scratch copy of the work
// tree, and the tests that cover the file (its sibling *.test.ts and every test file importing it)
// run against each; a mutant they pass survived. The real tree is never written; the scratch copy
// (in $TMPDIR, node_modules linked) goes when the run ends. docs/TESTING.md has the figures.
//
//   bun scripts/mutate.ts [--changed [--base REF]] [--max N] [--timeout S] [--tests T,…] [--list] [FILE…]
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { applyMutant, mutantsOf, spread, type Mutant } from "./lib/mutants.ts";

const ROOT = resolve(import.meta.dir, "..");
const USAGE = "usage: bun scripts/mutate.ts [--changed [--base REF]] [--max N (30)] [--timeout S] [--tests A.test.ts,…] [--list] [src/FILE.ts …]";

interface Args {
  files: string[];
  changed: boolean;
  base: string;
  max: number;
  /** Per mutant; by default four times the unmutated run, at least 30 s. */
  timeoutS: number | undefined;
  list: boolean;
  /** More test files to run for every file (tests that reach it through another module). */
  tests: string[];
}

function parseArgs(argv: string[]): Args {
  const args: Args = { files: [], changed: false, base: "main", max: 30, timeoutS: undefined, list: false, tests: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => argv[++i] ?? fail(`${a} needs a value`);
    if (a === "--changed") args.changed = true;
    else if (a === "--base") args.base = value();
    else if (a === "--max") args.max = Number(value());
    else if (a === "--timeout") args.timeoutS = Number(value());
    else if (a === "--list") args.list = true;
    else if (a === "--tests") args.tests.push(...value().split(",").map((t) => relative(ROOT, resolve(t))));
    else if (a === "--help" || a === "-h") fail(USAGE, 0);
    else if (a.startsWith("--")) fail(`unknown option ${a}\n${USAGE}`);
    else args.files.push(relative(ROOT, resolve(a)));
  }
  if (!(args.max > 0) || (args.timeoutS !== undefined && !(args.timeoutS > 0))) fail(`--max and --timeout take positive numbers\n${USAGE}`);
  return args;
}

function fail(message: string, code = 2): never {
  (code === 0 ? console.log : console.error)(message);
  process.exit(code);
}

function git(args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) fail(`git ${args.join(" ")} failed: ${r.stderr.toString().trim()}`);
  return r.stdout.toString();
}

/** Source files (not tests) changed since the merge base with `base`, committed or not. */
function changedFiles(base: string): string[] {
  const since = git(["merge-base", "HEAD", base]).trim();
  const names = [...git(["diff", "--name-only", since]).split("\n"), ...git(["ls-files", "--others", "--exclude-standard"]).split("\n")];
  return [...new Set(names)].filter((f) => /^src\/.*\.ts$/.test(f) && !f.endsWith(".test.ts") && Bun.file(join(ROOT, f)).size > 0);
}

/** The work tree's files as they are now (tracked and untracked, not ignored). */
const treeFiles = () => git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).split("\0").filter((f) => f !== "");

/** Test files that import `file` (relative specifiers resolved), its sibling test first. */
function coveringTests(file: string, files: readonly string[]): string[] {
  const target = resolve(ROOT, file);
  const tests = files.filter((f) => f.endsWith(".test.ts"));
  const out = tests.filter((t) => {
    const text = readFileSync(join(ROOT, t), "utf8");
    for (const m of text.matchAll(/(?:from\s+|import\(\s*)["'](\.[^"']+)["']/g)) if (resolve(dirname(join(ROOT, t)), m[1]!) === target) return true;
    return false;
  });
  const sibling = file.replace(/\.ts$/, ".test.ts");
  return [...out.filter((t) => t === sibling), ...out.filter((t) => t !== sibling)];
}

/** A copy of the work tree to break, its node_modules linked to the real one. */
function scratchCopy(files: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-mutate-"));
  for (const f of files) {
    try {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      copyFileSync(join(ROOT, f), join(dir, f));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err; // deleted in the work tree
    }
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  mkdirSync(join(dir, ".tmp"));
  return dir;
}

/** Runs the tests in the scratch copy: true when they pass; "timeout" when they ran past the limit (killed with their process group). */
async function testsPass(dir: string, tests: readonly string[], timeoutS: number): Promise<boolean | "timeout"> {
  const proc = Bun.spawn([process.execPath, "test", "--bail", "--timeout", "15000", "--preload", "./test/preload.ts", ...tests.map((t) => `./${t}`)], {
    cwd: dir,
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
    detached: true,
    // The tests' temp dirs live in the scratch copy too, so a killed run leaves none in $TMPDIR.
    env: { ...process.env, TMPDIR: join(dir, ".tmp") },
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {}
  }, timeoutS * 1000);
  const code = await proc.exited;
  clearTimeout(timer);
  return timedOut ? "timeout" : code === 0;
}

const shown = (m: Mutant) => `${m.operator}: ${m.original.trim()}  →  ${m.mutated.trim()}`;

interface FileScore {
  file: string;
  killed: number;
  total: number;
  survivors: Mutant[];
  seconds: number;
}

async function checkFile(dir: string, file: string, tests: string[], args: Args): Promise<FileScore | undefined> {
  const source = readFileSync(join(ROOT, file), "utf8");
  const all = mutantsOf(source);
  const mutants = spread(all, args.max);
  console.log(`\n${file}: ${mutants.length} of ${all.length} mutants; tests: ${tests.join(" ") || "(none)"}`);
  if (args.list) {
    for (const m of mutants) console.log(`  ${file}:${m.line}  ${shown(m)}`);
    return undefined;
  }
  if (tests.length === 0) {
    console.log("  no test imports this file: every mutant would survive");
    return { file, killed: 0, total: mutants.length, survivors: mutants, seconds: 0 };
  }
  const started = performance.now();
  if ((await testsPass(dir, tests, args.timeoutS ?? 600)) !== true) {
    console.log("  the tests fail (or time out) without a mutant: fix them first");
    return undefined;
  }
  const timeoutS = args.timeoutS ?? Math.max(30, (4 * (performance.now() - started)) / 1000);
  const score: FileScore = { file, killed: 0, total: mutants.length, survivors: [], seconds: 0 };
  const scratchFile = join(dir, file);
  try {
    for (const m of mutants) {
      writeFileSync(scratchFile, applyMutant(source, m));
      const passed = await testsPass(dir, tests, timeoutS);
      const verdict = passed === true ? "SURVIVED" : passed === "timeout" ? "KILLED (timeout)" : "KILLED";
      if (passed === true) score.survivors.push(m);
      else score.killed++;
      console.log(`  ${verdict.padEnd(16)} ${file}:${m.line}  ${shown(m)}`);
    }
  } finally {
    writeFileSync(scratchFile, source);
  }
  score.seconds = (performance.now() - started) / 1000;
  return score;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const files = [...new Set([...args.files, ...(args.changed ? changedFiles(args.base) : [])])];
  if (files.length === 0) fail(args.changed ? `no source file under src/ changed since ${args.base}` : USAGE);
  for (const f of files) if (!/^src\/.*\.ts$/.test(f) || f.endsWith(".test.ts")) fail(`${f}: only source files under src/ (not tests) are mutated`);
  const tree = treeFiles();
  const dir = args.list ? undefined : scratchCopy(tree);
  const cleanup = () => dir && rmSync(dir, { recursive: true, force: true });
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => (cleanup(), process.exit(130)));
  const scores: FileScore[] = [];
  try {
    for (const f of files) {
      const score = await checkFile(dir ?? "", f, [...new Set([...coveringTests(f, tree), ...args.tests])], args);
      if (score) scores.push(score);
    }
  } finally {
    cleanup();
  }
  if (scores.length === 0) return;
  console.log("\nmutation score (killed / mutants):");
  for (const s of scores) console.log(`  ${s.file}: ${s.killed}/${s.total} (${((100 * s.killed) / Math.max(1, s.total)).toFixed(0)} %), ${s.seconds.toFixed(0)} s`);
  const survivors = scores.flatMap((s) => s.survivors.map((m) => `  ${s.file}:${m.line}  ${shown(m)}`));
  if (survivors.length > 0) console.log(`\nsurvivors: kill each with an assertion, or record why it is equivalent (docs/TESTING.md)\n${survivors.join("\n")}`);
}

await main();
