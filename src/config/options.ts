// Option descriptors: each command declares its options once, and the flag spelling, the
// config-file key, the environment variables, the valibot check and the --help text all derive
// from that one declaration (so they can never drift apart).
import * as v from "valibot";

export const OPTION_KINDS = ["int", "number", "string", "bool", "enum", "intList", "json"] as const;
export type OptionKind = (typeof OPTION_KINDS)[number];

interface BaseOption<K extends OptionKind, T> {
  readonly kind: K;
  readonly description: string;
  readonly default?: T;
  /** Flag spelling without `--`; defaults to the kebab-case of the key. */
  readonly flag?: string;
  /**
   * An extra environment variable for this option, a name users of Dynamo or vLLM already know
   * (DYN_NAMESPACE). Every option also reads `KVCR_` + its flag in UPPER_SNAKE (see envNames).
   */
  readonly env?: string;
  /** Accepted on the command line only (e.g. --config itself), not inside a config file. */
  readonly flagOnly?: boolean;
  /**
   * Other spellings of the flag (without `--`), accepted on the command line and as config-file
   * keys: another tool's name for the same setting (vLLM's `--num-prompts` for `--requests`).
   */
  readonly aliases?: readonly string[];
  /**
   * The topic --help lists the option under ("Router", "Discovery"), and docs/cli.md's table for it.
   * Set with group() where a table is declared rather than option by option.
   */
  readonly group?: string;
}

export interface IntOption extends BaseOption<"int", number> { readonly min?: number; readonly max?: number }
export interface NumberOption extends BaseOption<"number", number> {
  readonly min?: number;
  readonly max?: number;
  /** Also takes `inf` (Infinity), as Python's float() does for vLLM's `--request-rate inf`. */
  readonly allowInfinity?: boolean;
}
export interface StringOption extends BaseOption<"string", string> {
  readonly nonEmpty?: boolean;
  /**
   * On the command line, takes every following argument up to the next `--flag`, joined by a
   * space (argparse's nargs="+": `--goodput ttft:500 tpot:50`).
   */
  readonly variadic?: boolean;
}
export type BoolOption = BaseOption<"bool", boolean>;
export interface EnumOption<C extends string = string> extends BaseOption<"enum", C> {
  readonly choices: readonly C[];
  /** Values this command refuses with a reason of their own (e.g. a mode only another command has), instead of "expected one of". */
  readonly refused?: Readonly<Record<string, string>>;
}
export interface IntListOption extends BaseOption<"intList", number[]> { readonly min?: number; readonly max?: number }
/** Free-form JSON value (objects from a config file, or a JSON string on the command line). */
export type JsonOption = BaseOption<"json", unknown>;

export type OptionSpec = IntOption | NumberOption | StringOption | BoolOption | EnumOption | IntListOption | JsonOption;
export type OptionTable = Record<string, OptionSpec>;

type ValueOf<O extends OptionSpec> = O extends EnumOption<infer C>
  ? C
  : O extends IntListOption
    ? number[]
    : O extends BoolOption
      ? boolean
      : O extends IntOption | NumberOption
        ? number
        : O extends StringOption
          ? string
          : unknown;

/** The resolved config type of an option table: options with a default are always present. */
export type ConfigOf<T extends OptionTable> = {
  -readonly [K in keyof T]: T[K] extends { default: unknown } ? ValueOf<T[K]> : ValueOf<T[K]> | undefined;
};

/** Typed identity helper so tables keep their literal types. */
export function defineOptions<const T extends OptionTable>(table: T): T {
  return table;
}

/**
 * The same table with every option under the topic `name` (its --help heading). Wrap a shared
 * table in it where it is declared, and every command that spreads the table lists those options
 * under that heading; a command's own options get theirs in its own table. A table that wraps a
 * spread of another re-files those options: the outermost group() decides.
 */
export function group<const T extends OptionTable>(name: string, table: T): T {
  return Object.fromEntries(Object.entries(table).map(([key, spec]) => [key, { ...spec, group: name }])) as T;
}

export function flagName(key: string, spec: OptionSpec): string {
  return spec.flag ?? key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * Environment variables an option reads, strongest first: `KVCR_` + the flag in UPPER_SNAKE
 * (`--block-size` → KVCR_BLOCK_SIZE), then the option's own `env` alias if it names another.
 */
export function envNames(key: string, spec: OptionSpec): string[] {
  const own = `KVCR_${flagName(key, spec).replace(/-/g, "_").toUpperCase()}`;
  return spec.env && spec.env !== own ? [own, spec.env] : [own];
}

/** What a valid value looks like, for error lines ("expected an integer ≥ 1"). */
export function expectation(spec: OptionSpec): string {
  const range = (s: { min?: number; max?: number }) =>
    s.min !== undefined && s.max !== undefined
      ? ` from ${s.min} to ${s.max}`
      : s.min !== undefined
        ? ` ≥ ${s.min}`
        : s.max !== undefined
          ? ` ≤ ${s.max}`
          : "";
  switch (spec.kind) {
    case "int":
      return `an integer${range(spec)}`;
    case "number":
      return `a number${range(spec)}${spec.allowInfinity ? " or inf" : ""}`;
    case "string":
      return spec.nonEmpty ? "a non-empty string" : "a string";
    case "bool":
      return "true or false";
    case "enum":
      return `one of ${spec.choices.join(", ")}`;
    case "intList":
      return `a list of integers${range(spec)} (comma-separated on the command line)`;
    case "json":
      return "a JSON value";
  }
}

export function schemaFor(spec: OptionSpec): v.GenericSchema {
  const bounded = (base: v.GenericSchema<number>, s: { min?: number; max?: number }) => {
    const checks: v.GenericValidation<number>[] = [];
    if (s.min !== undefined) checks.push(v.minValue(s.min) as v.GenericValidation<number>);
    if (s.max !== undefined) checks.push(v.maxValue(s.max) as v.GenericValidation<number>);
    return checks.length ? v.pipe(base, ...checks) : base;
  };
  switch (spec.kind) {
    case "int":
      return bounded(v.pipe(v.number(), v.integer()), spec);
    case "number":
      return bounded(spec.allowInfinity ? v.pipe(v.number(), v.check((n) => !Number.isNaN(n))) : v.pipe(v.number(), v.finite()), spec);
    case "string":
      return spec.nonEmpty ? v.pipe(v.string(), v.nonEmpty()) : v.string();
    case "bool":
      return v.boolean();
    case "enum":
      return v.picklist(spec.choices);
    case "intList":
      return v.array(bounded(v.pipe(v.number(), v.integer()), spec));
    case "json":
      return v.unknown();
  }
}

/**
 * Turns a command-line or environment string into the option's type. Returns the string
 * unchanged when it does not parse, so validation reports it with the original text.
 */
export function coerceText(spec: OptionSpec, text: string): unknown {
  switch (spec.kind) {
    case "int":
    case "number":
      if (spec.kind === "number" && spec.allowInfinity && /^\+?inf(inity)?$/i.test(text.trim())) return Infinity;
      return /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text.trim()) ? Number(text) : text;
    case "bool":
      if (/^(true|1|yes|on)$/i.test(text)) return true;
      if (/^(false|0|no|off)$/i.test(text)) return false;
      return text;
    case "intList": {
      const parts = text.split(",").map((p) => p.trim());
      if (parts.some((p) => !/^[+-]?\d+$/.test(p))) return text;
      return parts.map(Number);
    }
    case "json":
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    default:
      return text;
  }
}
