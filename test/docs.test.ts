// The documentation stays true to the code: docs/cli.md is what scripts/gen-cli-docs.ts writes
// from today's option tables, every relative link in README.md and docs/ reaches a file (and a
// heading, when it names one), the pages cite nothing outside the repository, and the README
// stays a five-minute read that carries the test command CI runs.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { checkCliDocs, REGENERATE } from "../scripts/gen-cli-docs.ts";

const ROOT = resolve(import.meta.dir, "..");
const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

/** Markdown outside fenced code blocks (links and citations inside examples are not prose). */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
}

/** GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/`/g, "");
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe("docs/cli.md", () => {
  test("matches the option tables (regenerate it after changing an option)", async () => {
    const result = await checkCliDocs();
    if (result.stale) throw new Error(`docs/cli.md is stale: run ${REGENERATE}`);
    expect(result.stale).toBe(false);
  });
});

describe("README.md and docs/", () => {
  test.each(PAGES)("every relative link in %s resolves", (page) => {
    const broken: string[] = [];
    for (const m of prose(read(page)).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      const [path = "", anchor] = target.split("#");
      const file = path === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path);
      if (!existsSync(file)) {
        broken.push(`${target}: no such file ${relative(ROOT, file)}`);
        continue;
      }
      if (anchor && statSync(file).isFile() && file.endsWith(".md") && !anchors(readFileSync(file, "utf8")).has(anchor)) {
        broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, file)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test.each(PAGES)("%s cites no document outside the repository", (page) => {
    const citations = read(page)
      .split("\n")
      .filter((line) => /\bSPEC\b|\bSTYLE\b|§|\b[Ii]ssue #?\d+/.test(line));
    expect(citations).toEqual([]);
  });

  test("every file the glossary's concept → file table names exists", () => {
    const page = read("docs/ARCHITECTURE.md");
    const start = page.indexOf("### Concept → file");
    expect(start).toBeGreaterThan(-1);
    const table = page.slice(start, page.indexOf("\n## ", start));
    const paths = [...table.matchAll(/^\|[^|]+\|\s*`([^`]+)`\s*\|$/gm)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThan(10);
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  test("the README is a five-minute read: at most 10 KB, no line over 200 characters", () => {
    const readme = read("README.md");
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(10 * 1024);
    expect(readme.split("\n").filter((l) => [...l].length > 200)).toEqual([]);
  });

  test("the README's test command is the one CI runs", () => {
    expect(read(".ci/run")).toContain("(npm install && npm test)");
    expect(read("README.md")).toContain("\nnpm install && npm test ");
    expect(read("README.md")).toContain("\nnpm install && npm start -- up --demo ");
  });
});
