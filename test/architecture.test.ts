// Enforces the project's layering rules: the import directions between src/ folders, the purity of
// src/core (no Bun, no node:*, no timers, no wall clock, no randomness, no process), that only
// src/transport opens sockets, and that tests start processes only through test/harness.ts.
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { dirname, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");

/** Which top-level src/ folders each folder may import from (value imports). */
const ALLOWED: Record<string, readonly string[]> = {
  "cli.ts": ["cli"],
  cli: ["cli", "roles", "config", "lib"],
  roles: ["roles", "core", "protocol", "transport", "discovery", "config", "lib"],
  transport: ["transport", "protocol", "lib"],
  discovery: ["discovery", "protocol", "lib"],
  protocol: ["protocol", "lib"],
  config: ["config", "protocol", "lib"], // config validates wire-facing values with protocol rules
  core: ["core"],
  lib: ["lib"],
};
/** core may take types (not code) from protocol. */
const TYPE_ONLY_EXTRA: Record<string, readonly string[]> = { core: ["protocol"] };
/** Named exceptions, each with its reason. */
const IMPORT_EXCEPTIONS: Record<string, string> = {
  "lib/xxh3.ts -> core": "binds Bun's XXH3 to the injected hash port of core/kv/block-hash.ts",
};
const SOCKET_APIS = ["Bun.listen", "Bun.connect", "Bun.serve", "Bun.udpSocket", "node:net", "node:dgram", "node:http"];
const SOCKET_EXCEPTIONS: Record<string, string> = {};
/** Ways to start a process; in tests only test/harness.ts may use them (own process group, killed with it, testEnv). */
const SPAWN_APIS = ["Bun.spawn", "child_process"];
const SPAWN_EXCEPTIONS: Record<string, string> = {
  "test/harness.ts": "spawnChild, the one way tests start processes",
  "test/architecture.test.ts": "names the APIs it forbids",
};
const CORE_BANNED = ["Date.now", "new Date", "performance.now", "Math.random", "crypto.", "setTimeout", "setInterval", "setImmediate", "queueMicrotask", "fetch(", "Bun.", "process.", "require("];

interface Import {
  spec: string;
  typeOnly: boolean;
}

function importsOf(source: string): Import[] {
  const out: Import[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm;
  for (const m of source.matchAll(re)) {
    const spec = m[3] ?? m[4];
    if (spec) out.push({ spec, typeOnly: Boolean(m[2]) });
  }
  return out;
}

/** "cli.ts" (a file at the top of src) counts as a folder of its own. */
function topFolder(absPath: string): string {
  return relative(SRC, absPath).split("/")[0]!;
}

/** The role folder of a path under src/roles/<role>/…; undefined for src/roles/shared/. */
function roleFolder(absPath: string): string | undefined {
  const parts = relative(SRC, absPath).split("/");
  return parts[0] === "roles" && parts.length > 2 && parts[1] !== "shared" ? parts[1] : undefined;
}

const isShared = (absPath: string) => relative(SRC, absPath).startsWith("roles/shared/");

const stripComments = (text: string) => text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, "");

/** Every rule a shipped source file (path relative to src/) breaks. */
function violationsOf(file: string, text: string): string[] {
  const violations: string[] = [];
  const abs = resolve(SRC, file);
  const from = topFolder(abs);
  for (const imp of importsOf(text)) {
    if (!imp.spec.startsWith(".")) {
      const isPlatform = imp.spec.startsWith("node:") || imp.spec === "bun" || imp.spec.startsWith("bun:");
      if (from === "core" && (isPlatform || !imp.typeOnly)) violations.push(`${file}: core imports package "${imp.spec}"`);
      continue;
    }
    const target = resolve(dirname(abs), imp.spec);
    if (!target.startsWith(SRC + "/")) {
      // package.json (the version) and the sample traces built into the binary are data, not code.
      const isData = target.endsWith("package.json") || (target.startsWith(resolve(SRC, "../traces") + "/") && target.endsWith(".jsonl"));
      if (!isData) violations.push(`${file}: imports outside src: ${imp.spec}`);
      continue;
    }
    const to = topFolder(target);
    const typeOk = imp.typeOnly && (TYPE_ONLY_EXTRA[from] ?? []).includes(to);
    if (!(ALLOWED[from] ?? []).includes(to) && !typeOk && !IMPORT_EXCEPTIONS[`${file} -> ${to}`]) {
      violations.push(`${file}: ${from} must not import ${to} (${imp.spec})`);
    }
    // roles/<a>/ may use roles/shared/, never roles/<b>/; roles/shared/ uses no role (docs/ARCHITECTURE.md, Import rules).
    const [fromRole, toRole] = [roleFolder(abs), roleFolder(target)];
    if (fromRole !== undefined && toRole !== undefined && fromRole !== toRole) {
      violations.push(`${file}: roles/${fromRole} must not import roles/${toRole} (${imp.spec}); move what they share down a layer or to roles/shared/`);
    }
    if (isShared(abs) && toRole !== undefined) violations.push(`${file}: roles/shared must not import roles/${toRole} (${imp.spec})`);
  }
  const code = stripComments(text);
  if (from === "core") for (const word of CORE_BANNED) if (code.includes(word)) violations.push(`${file}: core uses ${word}`);
  if (from !== "transport" && !SOCKET_EXCEPTIONS[file]) {
    for (const api of SOCKET_APIS) if (code.includes(api)) violations.push(`${file}: only src/transport opens sockets, found ${api}`);
  }
  return violations;
}

/**
 * The import circles among `files` (paths relative to src/): each a strongly connected set of two
 * or more files (type-only imports count: they tie the files all the same), its files sorted.
 */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's algorithm, iterative over an explicit stack of (file, next edge) frames.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const frames: [string, number][] = [[root, 0]];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const [file, edge] = frame;
      const targets = graph.get(file) ?? [];
      if (edge < targets.length) {
        frame[1]++;
        const to = targets[edge]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          frames.push([to, 0]);
        } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, index.get(to)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent[0], Math.min(low.get(parent[0])!, low.get(file)!));
      if (low.get(file) !== index.get(file)) continue;
      const members: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        members.push(member);
      } while (member !== file);
      if (members.length > 1) circles.push(members.sort());
    }
  }
  return circles;
}

/** Every relative import of each file, as paths relative to src/ (type-only ones included). */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, text] of sources) {
    const targets = importsOf(text)
      .filter((imp) => imp.spec.startsWith("."))
      .map((imp) => relative(SRC, resolve(dirname(resolve(SRC, file)), imp.spec)))
      .filter((target) => sources.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** A shipped file past this many lines is split by job, or docs/DECISIONS.md says why it is not. */
const MAX_LINES = 400;
/** Files over MAX_LINES, each with where the reason is or what is under way. */
const LONG_FILES: Record<string, string> = {};

// Tests and shared test suites (*.suite.ts) may reach into test/; only shipped code is checked.
const files = [...new Glob("**/*.ts").scanSync(SRC)].filter((f) => !f.endsWith(".test.ts") && !f.endsWith(".suite.ts"));

const REPO = resolve(import.meta.dir, "..");
/** Test code, as paths from the repo root: all of test/, and the tests and suites beside src/ code. */
const testCode = [
  ...[...new Glob("**/*.{ts,mjs}").scanSync(resolve(REPO, "test"))].map((f) => `test/${f}`),
  ...[...new Glob("**/*.{test,suite}.ts").scanSync(SRC)].map((f) => `src/${f}`),
];

/** A test file (path from the repo root) that starts a process other than through test/harness.ts. */
function spawnViolationsOf(file: string, text: string): string[] {
  if (SPAWN_EXCEPTIONS[file]) return [];
  const code = stripComments(text);
  return SPAWN_APIS.filter((api) => code.includes(api)).map((api) => `${file}: starts a process with ${api}; use spawnChild (or spawnProcess, runCli) from test/harness.ts`);
}

describe("architecture", () => {
  test("there are source files in every layer to check", () => {
    const layers = new Set(files.map((f) => f.split("/")[0]));
    for (const layer of ["cli", "config", "core", "protocol", "transport", "discovery", "roles", "lib"]) expect(layers.has(layer)).toBe(true);
  });

  test("every shipped file follows the rules", async () => {
    const violations: string[] = [];
    for (const file of files) violations.push(...violationsOf(file, await Bun.file(resolve(SRC, file)).text()));
    expect(violations).toEqual([]);
  });

  test("src/roles/ holds role folders and shared/ only, no loose files", () => {
    const loose = files.filter((f) => f.startsWith("roles/") && f.split("/").length === 2);
    expect(loose).toEqual([]);
  });

  test("no import circles among the shipped files", async () => {
    const sources = new Map<string, string>();
    for (const file of files) sources.set(file, await Bun.file(resolve(SRC, file)).text());
    const circles = importCircles(importGraph(sources)).map((c) => c.join(" "));
    expect(circles).toEqual([]);
  });

  test(`no shipped file over ${MAX_LINES} lines but the listed ones`, async () => {
    const long: string[] = [];
    for (const file of files) {
      const lines = (await Bun.file(resolve(SRC, file)).text()).split("\n").length - 1;
      if (lines > MAX_LINES && !LONG_FILES[file]) long.push(`${file}: ${lines} lines`);
    }
    expect(long).toEqual([]);
  });

  test("the circle finder finds circles, type-only edges included, and nothing else", () => {
    const graph = importGraph(
      new Map([
        ["a/x.ts", 'import { y } from "./y.ts";'],
        ["a/y.ts", 'import type { Z } from "../b/z.ts";'],
        ["b/z.ts", 'export type { X } from "../a/x.ts";\nimport { w } from "./w.ts";'],
        ["b/w.ts", 'import { q } from "./q.ts";'],
        ["b/q.ts", "export const q = 1;"],
        ["c/p.ts", 'import { r } from "./r.ts";'],
        ["c/r.ts", 'import { p } from "./p.ts";'],
      ]),
    );
    expect(importCircles(graph)).toEqual([["a/x.ts", "a/y.ts", "b/z.ts"], ["c/p.ts", "c/r.ts"]]);
  });

  test("tests start processes only through test/harness.ts", async () => {
    expect(testCode).toContain("test/harness.ts");
    const violations: string[] = [];
    for (const file of testCode) violations.push(...spawnViolationsOf(file, await Bun.file(resolve(REPO, file)).text()));
    expect(violations).toEqual([]);
  });

  test("the checker reports each kind of violation", () => {
    expect(violationsOf("core/engine/x.ts", 'import { PubSocket } from "../../transport/zmtp/index.ts";')).toEqual([
      "core/engine/x.ts: core must not import transport (../../transport/zmtp/index.ts)",
    ]);
    expect(violationsOf("core/engine/x.ts", 'import type { VllmKvEvent } from "../../protocol/kv-events/index.ts";')).toEqual([]);
    expect(violationsOf("core/engine/x.ts", 'import { encodeBatch } from "../../protocol/kv-events/index.ts";')).toHaveLength(1);
    expect(violationsOf("core/x.ts", 'import { readFileSync } from "node:fs";\nconst t = Date.now(); // Math.random in a comment is fine')).toEqual([
      'core/x.ts: core imports package "node:fs"',
      "core/x.ts: core uses Date.now",
    ]);
    expect(violationsOf("protocol/x.ts", 'const m = await import("../roles/mocker/index.ts");')).toEqual([
      "protocol/x.ts: protocol must not import roles (../roles/mocker/index.ts)",
    ]);
    expect(violationsOf("roles/x.ts", "Bun.serve({ fetch: () => new Response() });")).toEqual(["roles/x.ts: only src/transport opens sockets, found Bun.serve"]);
    expect(violationsOf("transport/x.ts", "Bun.listen({})")).toEqual([]);
    expect(violationsOf("roles/frontend/x.ts", 'import { startMocker } from "../mocker/index.ts";')).toEqual([
      "roles/frontend/x.ts: roles/frontend must not import roles/mocker (../mocker/index.ts); move what they share down a layer or to roles/shared/",
    ]);
    expect(violationsOf("roles/frontend/x.ts", 'import { engineConfigFrom } from "../shared/measure/engine-config-from-options.ts";')).toEqual([]);
    expect(violationsOf("roles/shared/stack/x.ts", 'import { startMocker } from "../../mocker/index.ts";')).toEqual([
      "roles/shared/stack/x.ts: roles/shared must not import roles/mocker (../../mocker/index.ts)",
    ]);
    expect(spawnViolationsOf("test/integration/x.test.ts", 'const p = Bun.spawn(["node", script], { stdout: "pipe" });')).toEqual([
      "test/integration/x.test.ts: starts a process with Bun.spawn; use spawnChild (or spawnProcess, runCli) from test/harness.ts",
    ]);
    expect(spawnViolationsOf("src/x.test.ts", 'import { spawn } from "node:child_process";\n// Bun.spawn in a comment is fine')).toEqual([
      "src/x.test.ts: starts a process with child_process; use spawnChild (or spawnProcess, runCli) from test/harness.ts",
    ]);
    expect(spawnViolationsOf("test/harness.ts", "Bun.spawn([...argv])")).toEqual([]);
  });
});
