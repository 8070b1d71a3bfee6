// The inverse of loadConfig: turns a resolved config back into the flags that reproduce it, so
// the launcher hands a role exactly the config it resolved (loadConfig(toArgv(c)) deep-equals c,
// property-tested). Values equal to the default are left out to keep child command lines short.
import { flagName, type ConfigOf, type OptionSpec, type OptionTable } from "./options.ts";

export function toArgv<T extends OptionTable>(table: T, config: Partial<ConfigOf<T>>): string[] {
  const argv: string[] = [];
  for (const [key, spec] of Object.entries(table)) {
    if (spec.flagOnly) continue; // --config itself: the resolved values are passed instead
    const value = (config as Record<string, unknown>)[key];
    if (value === undefined || sameValue(value, spec.default)) continue;
    argv.push(...flagFor(flagName(key, spec), spec, value));
  }
  return argv;
}

function flagFor(flag: string, spec: OptionSpec, value: unknown): string[] {
  switch (spec.kind) {
    case "bool":
      return [value ? `--${flag}` : `--no-${flag}`];
    case "intList":
      // An empty list has no comma form; it only arises from a config file and means "none".
      return (value as number[]).length === 0 ? [] : [`--${flag}=${(value as number[]).join(",")}`];
    case "json":
      return [`--${flag}=${JSON.stringify(value)}`];
    default:
      // `--flag=value` keeps values that start with `--` (or are empty) one argument.
      return [`--${flag}=${String(value)}`];
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
  return Object.is(a, b);
}
