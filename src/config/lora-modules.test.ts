import { describe, expect, test } from "bun:test";
import { parseLoraModules } from "./lora-modules.ts";

describe("--lora-modules", () => {
  test("several name=path entries after one flag, and vLLM's JSON form (spaces inside included)", () => {
    expect(parseLoraModules("a=/p b=/q", "m")).toEqual([
      { name: "a", path: "/p" },
      { name: "b", path: "/q" },
    ]);
    expect(parseLoraModules('{"name": "sql", "path": "/adapters/sql lora", "base_model_name": "m"} c=/r', "m")).toEqual([
      { name: "sql", path: "/adapters/sql lora", baseModelName: "m" },
      { name: "c", path: "/r" },
    ]);
  });

  test("bad entries are named", () => {
    expect(parseLoraModules("a", "m")).toBe('--lora-modules: got "a", expected name=path (or a JSON object {"name", "path", "base_model_name"})');
    expect(parseLoraModules("=/p", "m")).toContain('got "=/p"');
    expect(parseLoraModules("a=/p a=/q", "m")).toBe("--lora-modules: adapter a is given twice");
    expect(parseLoraModules("m=/p", "m")).toBe("--lora-modules: adapter name m is the served model's own name");
    expect(parseLoraModules('{"name": "a"', "m")).toContain("is not a complete JSON object");
    expect(parseLoraModules('{"name": "a"}', "m")).toContain('"path" must be a non-empty string');
    expect(parseLoraModules('{"name": "a", "path": "/p", "rank": 8}', "m")).toContain('unknown key "rank"');
    expect(parseLoraModules('{"name": "a", "path": "/p", "base_model_name": "other"}', "m")).toContain('names base_model_name "other", but this worker serves "m"');
  });
});
