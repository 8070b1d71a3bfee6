// Enforces STYLE.md's import directions between src/ folders and the purity of src/core
// (no Bun, no node:*, no timers, no wall clock, no randomness, no process).
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
const EXCEPTIONS: Record<string, string> = {
  // Binds Bun's XXH3 to the injected hash port of core/kv/block-hash.ts (core cannot call Bun).
  "lib/xxh3.ts -> core": "platform binding of a core port",
};

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

function topFolder(absPath: string): string {
  // "cli.ts" (a file at the top of src) counts as a folder of its own.
  return relative(SRC, absPath).split("/")[0]!;
}

// Tests and shared test suites (*.suite.ts) may reach into test/; only shipped code is checked.
const files = [...new Glob("**/*.ts").scanSync(SRC)].filter((f) => !f.endsWith(".test.ts") && !f.endsWith(".suite.ts"));

describe("architecture", () => {
  test("there are source files to check", () => {
    expect(files.length).toBeGreaterThan(5);
  });

  test("imports follow the allowed directions", async () => {
    const violations: string[] = [];
    for (const file of files) {
      const abs = resolve(SRC, file);
      const from = topFolder(abs);
      const text = await Bun.file(abs).text();
      for (const imp of importsOf(text)) {
        if (!imp.spec.startsWith(".")) {
          const isPlatform = imp.spec.startsWith("node:") || imp.spec === "bun" || imp.spec.startsWith("bun:");
          if (from === "core" && (isPlatform || !imp.typeOnly)) violations.push(`${file}: core imports package "${imp.spec}"`);
          continue;
        }
        const target = resolve(dirname(abs), imp.spec);
        if (!target.startsWith(SRC + "/")) {
          if (!target.endsWith("package.json")) violations.push(`${file}: imports outside src: ${imp.spec}`);
          continue;
        }
        const to = topFolder(target);
        const allowed = ALLOWED[from] ?? [];
        const typeOk = imp.typeOnly && (TYPE_ONLY_EXTRA[from] ?? []).includes(to);
        if (!allowed.includes(to) && !typeOk && !EXCEPTIONS[`${file} -> ${to}`]) {
          violations.push(`${file}: ${from} must not import ${to} (${imp.spec})`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  test("src/core is pure: no platform, clock, timers, randomness or process", async () => {
    const banned = ["Date.now", "performance.now", "Math.random", "setTimeout", "setInterval", "setImmediate", "Bun.", "process.", "require("];
    const violations: string[] = [];
    for (const file of files.filter((f) => f.startsWith("core/"))) {
      const text = (await Bun.file(resolve(SRC, file)).text()).replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, "");
      for (const word of banned) if (text.includes(word)) violations.push(`${file}: uses ${word}`);
    }
    expect(violations).toEqual([]);
  });

  test("the checker itself catches a violation", () => {
    expect(importsOf('import { x } from "../transport/zmtp/pub.ts";')[0]).toEqual({ spec: "../transport/zmtp/pub.ts", typeOnly: false });
    expect(importsOf('import type { X } from "../../protocol/a.ts";')[0]?.typeOnly).toBe(true);
    expect(importsOf('const m = await import("./roles/mocker/index.ts");')[0]?.spec).toBe("./roles/mocker/index.ts");
  });
});
