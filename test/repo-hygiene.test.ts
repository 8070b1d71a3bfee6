// The repository holds only what someone meant: the root's tracked entries match an allow-list,
// and no tracked file is empty or a log, so a stray `2> x.err` or scratch file fails here.
import { describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { REPO_ROOT, spawnChild } from "./harness.ts";

/** Every file and folder meant to live at the repository root, each with what it is for. */
const ROOT_ENTRIES: Record<string, string> = {
  ".ci": "the CI runner script",
  ".github": "GitHub workflows",
  ".gitignore": "what tools write and git must not track",
  "CHANGELOG.md": "release notes",
  LICENSE: "the licence",
  "README.md": "the newcomer's page",
  bench: "benchmarks that print figures",
  "bunfig.toml": "Bun's settings",
  docs: "reference documentation",
  examples: "stack configs a user can copy",
  "install.sh": "the one-line installer",
  "package-lock.json": "pinned dependencies",
  "package.json": "the package and its scripts",
  scripts: "build and release scripts",
  src: "the source",
  test: "tests and their harness",
  traces: "sample traces built into the binary",
  "tsconfig.json": "TypeScript settings",
  wasm: "the AssemblyScript hash module",
};
/** Suffixes that only tools and shell redirections write. */
const TOOL_OUTPUT = /\.(log|err|out|tmp|swp|orig|rej)$|(^|\/)\.DS_Store$/;

async function trackedFiles(): Promise<string[]> {
  await using git = spawnChild(["git", "ls-files", "-z"], { cwd: REPO_ROOT });
  const [text, code] = await Promise.all([new Response(git.proc.stdout).text(), git.proc.exited]);
  if (code !== 0) throw new Error(`git ls-files exited with ${code}: ${await new Response(git.proc.stderr).text()}`);
  return text.split("\0").filter((path) => path.length > 0);
}

describe("repository hygiene", () => {
  test("the root holds only the allow-listed files and folders", async () => {
    const rootEntries = new Set((await trackedFiles()).map((path) => path.split("/")[0]!));
    const unexpected = [...rootEntries].filter((entry) => !(entry in ROOT_ENTRIES)).sort();
    expect(unexpected, "untracked them, or add them to ROOT_ENTRIES with what they are for").toEqual([]);
  });

  test("no tracked file is empty or tool output", async () => {
    const files = await trackedFiles();
    const toolOutput = files.filter((path) => TOOL_OUTPUT.test(path));
    // A file deleted in the work tree but still tracked is not empty, just not committed yet.
    const empty = files.filter((path) => statSync(`${REPO_ROOT}/${path}`, { throwIfNoEntry: false })?.size === 0);
    expect(toolOutput).toEqual([]);
    expect(empty).toEqual([]);
  });
});
