import { expect, test } from "bun:test";
import { pathOf } from "./path-of.ts";

const known = new Set(["/v1/generate", "/health"]);

test("a known route spelled plainly is taken as is", () => {
  expect(pathOf("http://127.0.0.1:8000/v1/generate", known)).toBe("/v1/generate");
});

test("anything else is normalized by URL", () => {
  expect(pathOf("http://h/health?verbose=1", known)).toBe("/health");
  expect(pathOf("http://h/v1/../health", known)).toBe("/health");
  expect(pathOf("http://h/unknown/path", known)).toBe("/unknown/path");
  expect(pathOf("http://h", known)).toBe("/");
});
