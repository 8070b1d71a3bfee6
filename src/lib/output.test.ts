import { describe, expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { createConsola } from "consola";
import { guardOutput } from "./output.ts";

function capturingLogger() {
  const lines: string[] = [];
  return { logger: createConsola({ level: 4, reporters: [{ log: (o) => lines.push(`${o.type}: ${o.args.join(" ")}`) }] }), lines };
}
const errno = (code: string) => Object.assign(new Error(`${code}: write failed`), { code });

/** A stream whose write() succeeds, throws or emits "error", as the test chooses. */
function fakeStream() {
  const s = new EventEmitter() as EventEmitter & { written: string[]; mode: "ok" | "throw" | "emit"; code: string; write(t: string): boolean };
  s.written = [];
  s.mode = "ok";
  s.code = "EPIPE";
  s.write = (t: string) => {
    if (s.mode === "throw") throw errno(s.code);
    if (s.mode === "emit") queueMicrotask(() => s.emit("error", errno(s.code)));
    s.written.push(t);
    return true;
  };
  return s;
}
const pending = Symbol("pending");
const settled = (p: Promise<number>) => Promise.race([p, Bun.sleep(0).then(() => pending)]);

describe("guardOutput", () => {
  test("EPIPE thrown by write (Bun): swallowed, later writes dropped, stopped resolves 0", async () => {
    const s = fakeStream();
    const { logger, lines } = capturingLogger();
    const out = guardOutput(s as unknown as NodeJS.WritableStream, logger);
    out.write("a\n");
    expect(await settled(out.stopped)).toBe(pending);
    s.mode = "throw";
    expect(() => out.write("b\n")).not.toThrow();
    s.mode = "ok";
    out.write("c\n");
    expect(await out.stopped).toBe(0);
    expect(s.written).toEqual(["a\n"]);
    expect(lines).toEqual(["debug: stdout closed by its reader (EPIPE): stopping"]);
  });

  test("EPIPE as an error event (Node): stopped resolves 0", async () => {
    const s = fakeStream();
    const out = guardOutput(s as unknown as NodeJS.WritableStream, capturingLogger().logger);
    s.mode = "emit";
    out.write("a\n");
    expect(await out.stopped).toBe(0);
  });

  test("any other write error is logged and stops with exit code 1", async () => {
    const s = fakeStream();
    const { logger, lines } = capturingLogger();
    const out = guardOutput(s as unknown as NodeJS.WritableStream, logger);
    s.mode = "throw";
    s.code = "ENOSPC";
    out.write("a\n");
    expect(await out.stopped).toBe(1);
    expect(lines).toEqual(["error: cannot write to stdout: ENOSPC: write failed"]);
  });
});
