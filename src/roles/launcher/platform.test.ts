import { expect, test } from "bun:test";
import { upUnsupportedOn } from "./platform.ts";

test("up runs on Linux and macOS; on Windows it refuses, naming what is missing and what to do instead", () => {
  expect(upUnsupportedOn("linux")).toBeUndefined();
  expect(upUnsupportedOn("darwin")).toBeUndefined();
  const why = upUnsupportedOn("win32")!;
  for (const part of ["not supported on Windows", "process groups", "/bin/sh", "kvcr-mock mocker", "WSL"]) expect(why).toContain(part);
});
