import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { commonOptions } from "./common.ts";
import { loadConfig } from "./load.ts";
import { mockerOptions } from "./mocker.ts";
import { defineOptions, type OptionSpec, type OptionTable } from "./options.ts";
import { toArgv } from "./to-argv.ts";
import { upOptions } from "./up.ts";

/** Any value the option accepts (what a config file, env or flag could have resolved to). */
function valueOf(spec: OptionSpec): fc.Arbitrary<unknown> {
  const ints = (s: { min?: number; max?: number }) => fc.integer({ min: s.min ?? -1_000_000, max: s.max ?? 1_000_000 });
  switch (spec.kind) {
    case "int":
      return ints(spec);
    case "number":
      return fc.double({ min: spec.min ?? -1e9, max: spec.max ?? 1e9, noNaN: true, noDefaultInfinity: true }).map((x) => (Object.is(x, -0) ? 0 : x));
    case "string":
      return spec.nonEmpty ? fc.string({ minLength: 1 }) : fc.string();
    case "bool":
      return fc.boolean();
    case "enum":
      return fc.constantFrom(...spec.choices);
    case "intList":
      return fc.array(ints(spec), { minLength: 1, maxLength: 5 });
    case "json":
      return fc.json().map((text) => JSON.parse(text) as unknown).filter((v) => !Object.is(v, -0));
  }
}

function configOf(table: OptionTable): fc.Arbitrary<Record<string, unknown>> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, spec] of Object.entries(table)) {
    if (spec.flagOnly) continue;
    fields[key] = spec.default === undefined ? fc.option(valueOf(spec), { nil: undefined }) : valueOf(spec);
  }
  return fc.record(fields);
}

const everyKind = defineOptions({
  count: { kind: "int", min: 0, default: 3, description: "" },
  ratio: { kind: "number", description: "" },
  name: { kind: "string", description: "" },
  label: { kind: "string", nonEmpty: true, default: "x", description: "" },
  on: { kind: "bool", default: true, description: "" },
  off: { kind: "bool", default: false, description: "" },
  mode: { kind: "enum", choices: ["a", "b"], default: "a", description: "" },
  ports: { kind: "intList", min: 0, max: 65535, description: "" },
  extra: { kind: "json", description: "" },
  custom: { kind: "int", flag: "custom-flag", description: "" },
});

describe("toArgv is the inverse of loadConfig", () => {
  for (const [name, table] of [
    ["every option kind", { ...everyKind, ...commonOptions }],
    ["mocker", { ...mockerOptions, ...commonOptions }],
    ["up", { ...upOptions, ...commonOptions }],
  ] as const) {
    test(`round trip: ${name}`, () => {
      fc.assert(
        fc.property(configOf(table), (config) => {
          const argv = toArgv(table, config as never);
          const back = loadConfig(table, { argv, env: {} }).config as Record<string, unknown>;
          const expected = Object.fromEntries(Object.entries(table).map(([k, spec]) => [k, config[k] === undefined ? spec.default : config[k]]));
          expect(back).toEqual(expected);
        }),
        { numRuns: 200 },
      );
    });
  }

  test("defaults are left out", () => {
    expect(toArgv(everyKind, { count: 3, on: true, off: false, mode: "a" })).toEqual([]);
  });

  test("strings that look like flags stay one argument", () => {
    expect(toArgv(everyKind, { name: "--help", on: false, ports: [1, 2], label: "" })).toEqual(["--name=--help", "--label=", "--no-on", "--ports=1,2"]);
  });

  test("an option with its own flag name is written under that name", () => {
    expect(toArgv(everyKind, { custom: 7 })).toEqual(["--custom-flag=7"]);
  });
});
