// `bench --compare-urls NAME=URL,…` (servers the user started: any router, or any stack) and
// `bench --compare-stacks NAME=FILE,…` (a fresh stack per side and round, each from its `up` stack
// file): the named sides of a comparison, the first the baseline. `--url-per-mode` without
// --compare-router-modes is --compare-urls by its older name.
import { existsSync } from "node:fs";
import { group } from "./options.ts";

export const compareTargetOptions = group("Comparisons and fresh stacks", {
  compareUrls: {
    kind: "string",
    nonEmpty: true,
    description: "Run the same workload against each running server, NAME=URL,… (a router or stack you started; the first is the baseline): the verdict, then the sides side by side",
  },
  compareStacks: {
    kind: "string",
    nonEmpty: true,
    description: "Run the same workload against a fresh stack per side and round, NAME=FILE,… (`up` stack files; the first is the baseline; 3 rounds unless --rounds): the verdict, then the sides side by side",
  },
});

export interface CompareTargetConfig {
  compareUrls?: string | undefined;
  compareStacks?: string | undefined;
  urlPerMode?: string | undefined;
  compareRouterModes?: string | undefined;
  compareLayouts?: string | undefined;
  sweepConcurrency?: number[] | undefined;
  stackConfig?: string | undefined;
  url?: string | undefined;
  withReplay?: boolean;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** "a=X,b=Y" → [[a, X], [b, Y]] in order, or the problems (each naming the flag and the part). */
export function parseNamedSides(text: string, flag: string, what: string, valid: (v: string) => boolean): [string, string][] | string[] {
  const out: [string, string][] = [];
  const problems: string[] = [];
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (eq === -1 || !NAME.test(name) || !valid(value)) problems.push(`${flag}: got "${part.trim()}", expected NAME=${what} (NAME of letters, digits, . _ -)`);
    else if (out.some(([n]) => n === name)) problems.push(`${flag}: the name ${name} is given twice; each side needs its own`);
    else out.push([name, value]);
  }
  if (problems.length === 0 && out.length < 2) problems.push(`${flag}: got one side (${out[0]?.[0] ?? "none"}), expected at least two to compare`);
  return problems.length > 0 ? problems : out;
}

const isUrl = (v: string) => /^https?:\/\/\S+$/.test(v);

/** --compare-urls, or --url-per-mode standing for it (without --compare-router-modes). */
export function compareUrlsText(c: CompareTargetConfig): { text: string; flag: string } | undefined {
  if (c.compareUrls !== undefined) return { text: c.compareUrls, flag: "--compare-urls" };
  if (c.urlPerMode !== undefined && c.compareRouterModes === undefined) return { text: c.urlPerMode, flag: "--url-per-mode" };
  return undefined;
}

export function parseCompareUrls(c: CompareTargetConfig): [string, string][] | undefined {
  const given = compareUrlsText(c);
  return given === undefined ? undefined : (parseNamedSides(given.text, given.flag, "URL", isUrl) as [string, string][]);
}

export function parseCompareStacks(c: CompareTargetConfig): [string, string][] | undefined {
  return c.compareStacks === undefined ? undefined : (parseNamedSides(c.compareStacks, "--compare-stacks", "FILE", (v) => v !== "") as [string, string][]);
}

/** What is wrong with --compare-urls / --compare-stacks and what they are given beside. */
export function compareTargetProblems(c: CompareTargetConfig, hasUrl: boolean): string[] {
  const out: string[] = [];
  const urls = compareUrlsText(c);
  if (urls !== undefined) {
    const parsed = parseNamedSides(urls.text, urls.flag, "URL", isUrl);
    if (typeof parsed[0] === "string") out.push(...(parsed as string[]));
    if (hasUrl) out.push(`--url and ${urls.flag}: give one (a comparison runs against each side's URL)`);
    if (c.compareUrls !== undefined && c.urlPerMode !== undefined) out.push("--compare-urls and --url-per-mode: give one (--url-per-mode is its older name)");
  }
  if (c.compareStacks !== undefined) {
    const parsed = parseNamedSides(c.compareStacks, "--compare-stacks", "FILE", (v) => v !== "");
    if (typeof parsed[0] === "string") out.push(...(parsed as string[]));
    else for (const [name, file] of parsed as [string, string][]) if (!existsSync(file)) out.push(`--compare-stacks: ${name}'s stack file ${file} does not exist`);
    const beside: [boolean, string][] = [
      [hasUrl, "--url"],
      [urls !== undefined, urls?.flag ?? "--compare-urls"],
      [c.stackConfig !== undefined, "--stack-config"],
      [c.compareRouterModes !== undefined, "--compare-router-modes"],
      [c.compareLayouts !== undefined, "--compare-layouts"],
      [c.sweepConcurrency !== undefined, "--sweep-concurrency"],
    ];
    for (const [given, flag] of beside) if (given) out.push(`--compare-stacks and ${flag}: each side's stack file says it all; compare one thing at a time (drop ${flag})`);
  }
  if (urls !== undefined && c.compareLayouts !== undefined) out.push(`${urls.flag} and --compare-layouts: compare one thing at a time`);
  if (c.withReplay && (urls !== undefined || c.compareStacks !== undefined)) out.push(`--with-replay: compares one live run with its simulation; drop ${urls?.flag ?? "--compare-stacks"}`);
  return out;
}
