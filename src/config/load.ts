// The one config loader: defaults < config file < environment < flags. Every option reads
// `KVCR_<FLAG>` (and its own alias such as DYN_NAMESPACE), so any options table gets it for free.
// Everything is validated once; every problem becomes one line `key: got X, expected Y`, and
// nothing starts on bad config (the CLI exits 2 with those lines).
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { parse as parseYaml } from "yaml";
import { closestName } from "../lib/closest-name.ts";
import { ConfigError } from "../lib/errors.ts";
import {
  coerceText,
  envNames,
  expectation,
  flagName,
  schemaFor,
  type ConfigOf,
  type OptionSpec,
  type OptionTable,
} from "./options.ts";

export interface ConfigInputs {
  /** Arguments after the subcommand name. */
  argv: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
  /** Config file contents by path; defaults to reading the file system. */
  readFile?: (path: string) => string;
}

export interface LoadedConfig<T extends OptionTable> {
  config: ConfigOf<T>;
  /** Everything after `--` (e.g. the command `up -- CMD…` runs). */
  rest: string[];
}

/** Cross-field checks a command adds after each value is valid on its own. */
export type Refine<T extends OptionTable> = (config: ConfigOf<T>) => string[];

/**
 * A layer above the flags, computed from the config resolved so far (e.g. the mocker's
 * --extra-engine-args file, which overrides flags). Its values are validated like any other.
 * `given` holds the keys some input set (flag, environment or file) (not left at their default).
 */
export type Overlay<T extends OptionTable> = (config: ConfigOf<T>, problems: string[], given: ReadonlySet<string>) => Map<string, Candidate>;

/**
 * A sectioned config file (`up`'s stack file): the top level holds only these section names, and
 * each section only the keys listed for it (`mocker: {block_size: 16}`).
 */
export type ConfigSections<T extends OptionTable> = Readonly<Record<string, readonly (keyof T & string)[]>>;

export interface Candidate {
  value: unknown;
  label: string;
}

export function loadConfig<T extends OptionTable>(
  table: T,
  inputs: ConfigInputs,
  refine?: Refine<T>,
  opts: { overlay?: Overlay<T>; sections?: ConfigSections<T> } = {},
): LoadedConfig<T> {
  const problems: string[] = [];
  const byFlag = new Map<string, [string, OptionSpec]>();
  for (const [key, spec] of Object.entries(table)) {
    byFlag.set(flagName(key, spec), [key, spec]);
    for (const alias of spec.aliases ?? []) byFlag.set(alias, [key, spec]);
  }

  const fromFlags = parseArgv(inputs.argv, byFlag, problems);
  for (const p of fromFlags.positionals) problems.push(`unexpected argument "${p}" (this command takes only --flags)`);

  const env = inputs.env ?? {};
  const configPath = (fromFlags.values.get("config")?.value ?? envValue(table, "config", env)) as string | undefined;
  const fromFile = configPath ? readConfigFile(configPath, table, byFlag, inputs.readFile, problems, opts.sections) : new Map<string, Candidate>();

  const raw: Record<string, unknown> = {};
  const givenKeys = new Set<string>();
  for (const [key, spec] of Object.entries(table)) {
    // Every value given is checked, also one a stronger input overrides: a broken config file or
    // environment variable is reported even when a flag happens to win.
    const given = [fromFlags.values.get(key), ...envCandidates(key, spec, env), fromFile.get(key)].filter((c): c is Candidate => c !== undefined);
    raw[key] = spec.default;
    if (given.length > 0) givenKeys.add(key);
    for (const [i, candidate] of given.entries()) {
      const result = v.safeParse(schemaFor(spec), candidate.value);
      if (!result.success) problems.push(invalid(candidate, spec));
      else if (i === 0) raw[key] = result.output;
    }
  }

  if (problems.length === 0 && opts.overlay) {
    for (const [key, candidate] of opts.overlay(raw as ConfigOf<T>, problems, givenKeys)) {
      const spec = table[key];
      if (!spec) continue;
      const result = v.safeParse(schemaFor(spec), candidate.value);
      if (result.success) raw[key] = result.output;
      else problems.push(invalid(candidate, spec));
    }
  }
  if (problems.length === 0 && refine) problems.push(...refine(raw as ConfigOf<T>));
  if (problems.length > 0) throw new ConfigError(problems);
  return { config: raw as ConfigOf<T>, rest: fromFlags.rest };
}

/** The option's environment values, strongest first (an empty variable counts as unset). */
function envCandidates(key: string, spec: OptionSpec, env: Readonly<Record<string, string | undefined>>): Candidate[] {
  const out: Candidate[] = [];
  for (const name of envNames(key, spec)) {
    const text = env[name];
    if (text !== undefined && text !== "") out.push({ value: coerceText(spec, text), label: `${name} (environment)` });
  }
  return out;
}

function envValue(table: OptionTable, key: string, env: Readonly<Record<string, string | undefined>>): unknown {
  const spec = table[key];
  return spec ? envCandidates(key, spec, env)[0]?.value : undefined;
}

function parseArgv(
  argv: readonly string[],
  byFlag: Map<string, [string, OptionSpec]>,
  problems: string[],
): { values: Map<string, Candidate>; positionals: string[]; rest: string[] } {
  const values = new Map<string, Candidate>();
  const positionals: string[] = [];
  let rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      rest = argv.slice(i + 1);
      break;
    }
    if (!token.startsWith("--")) {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf("=");
    const name = token.slice(2, eq === -1 ? undefined : eq);
    const inline = eq === -1 ? undefined : token.slice(eq + 1);
    let entry = byFlag.get(name);
    let negated = false;
    if (!entry && name.startsWith("no-")) {
      const positive = byFlag.get(name.slice(3));
      if (positive && positive[1].kind === "bool") [entry, negated] = [positive, true];
    }
    if (!entry) {
      const near = closestName(name, byFlag.keys());
      problems.push(`--${name}: unknown flag${near ? `; did you mean --${near}?` : ""} (see --help for the flags this command takes)`);
      // Its value, if it has one, goes with it: one problem line per mistake, not a second "unexpected argument".
      if (inline === undefined && argv[i + 1] !== undefined && !argv[i + 1]!.startsWith("--")) i++;
      continue;
    }
    const [key, spec] = entry;
    // Named as typed: an alias's problem line names the alias.
    const label = `--${negated ? name.slice(3) : name}`;
    if (spec.kind === "bool" && inline === undefined) {
      values.set(key, { value: !negated, label });
      continue;
    }
    let text = inline;
    if (text === undefined && spec.kind === "string" && spec.variadic) {
      // argparse's nargs="+": every argument up to the next --flag.
      const words: string[] = [];
      while (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith("--")) words.push(argv[++i]!);
      if (words.length > 0) text = words.join(" ");
    }
    if (text === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next !== "--")) {
        problems.push(`${label}: missing value, expected ${expectation(spec)}`);
        continue;
      }
      text = next;
      i++;
    }
    let value = coerceText(spec, text);
    // A list flag may repeat: --zmq-kv-events-ports 5557 --zmq-kv-events-ports 5558.
    const previous = values.get(key)?.value;
    if (spec.kind === "intList" && Array.isArray(previous) && Array.isArray(value)) value = [...previous, ...value];
    values.set(key, { value, label });
  }
  return { values, positionals, rest };
}

function readConfigFile(
  path: string,
  table: OptionTable,
  byFlag: Map<string, [string, OptionSpec]>,
  readFile: ((path: string) => string) | undefined,
  problems: string[],
  sections?: Readonly<Record<string, readonly string[]>>,
): Map<string, Candidate> {
  const out = new Map<string, Candidate>();
  let text: string;
  try {
    text = (readFile ?? ((p) => readFileSync(p, "utf8")))(path);
  } catch (err) {
    problems.push(`--config: cannot read ${path}: ${(err as Error).message}`);
    return out;
  }
  let doc: unknown;
  try {
    doc = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    // The whole message: YAML's carries the line, the column and a code frame below the first line.
    const detail = (err as Error).message.trimEnd().split("\n").filter((l) => l.trim() !== "").join("\n    ");
    problems.push(`--config: ${path} is not valid ${/\.json$/i.test(path) ? "JSON" : "YAML"}: ${detail}`);
    return out;
  }
  if (doc === null || doc === undefined) return out; // an empty file sets nothing
  if (typeof doc !== "object" || Array.isArray(doc)) {
    problems.push(`--config: ${path} must hold a mapping of option names to values, got ${Array.isArray(doc) ? "a list" : typeof doc}`);
    return out;
  }
  if (!sections) {
    readMapping(doc as Record<string, unknown>, "", undefined);
    return out;
  }
  for (const [section, body] of Object.entries(doc as Record<string, unknown>)) {
    if (!Object.hasOwn(sections, section)) {
      problems.push(`${section} (in ${path}): unknown section, expected one of ${Object.keys(sections).join(", ")}`);
    } else if (body === null || body === undefined) {
      continue; // an empty section sets nothing
    } else if (typeof body !== "object" || Array.isArray(body)) {
      problems.push(`${section} (in ${path}): must be a mapping of option names to values`);
    } else {
      readMapping(body as Record<string, unknown>, `${section}.`, new Set(sections[section]));
    }
  }
  return out;

  function readMapping(mapping: Record<string, unknown>, labelPrefix: string, allowed: Set<string> | undefined) {
    for (const [fileKey, value] of Object.entries(mapping)) {
      // Accept the flag spelling, snake_case, or the camelCase key.
      // Own keys only: "constructor" or "__proto__" in a file are unknown keys, not prototype hits.
      const entry = byFlag.get(fileKey.replace(/_/g, "-")) ?? (Object.hasOwn(table, fileKey) ? ([fileKey, table[fileKey]!] as [string, OptionSpec]) : undefined);
      const label = `${labelPrefix}${fileKey} (in ${path})`;
      if (!entry || entry[1].flagOnly || (allowed && !allowed.has(entry[0]))) {
        problems.push(`${label}: unknown key for ${allowed ? `the ${labelPrefix.slice(0, -1)} section` : "this command"}`);
        continue;
      }
      out.set(entry[0], { value, label });
    }
  }
}

/** The problem line of a value the option does not accept (an enum's refused value gives its own reason). */
function invalid(candidate: Candidate, spec: OptionSpec): string {
  const refused = spec.kind === "enum" ? spec.refused : undefined;
  const reason = refused !== undefined && typeof candidate.value === "string" && Object.hasOwn(refused, candidate.value) ? refused[candidate.value] : undefined;
  return reason !== undefined ? `${candidate.label}: ${reason}` : `${candidate.label}: got ${show(candidate.value)}, expected ${expectation(spec)}`;
}

function show(value: unknown): string {
  const text = typeof value === "number" && !Number.isFinite(value) ? String(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
