import { describe, expect, test } from "bun:test";
import { createConsola } from "consola";
import { join } from "node:path";
import { REPO_ROOT, spawnBun } from "../../test/harness.ts";
import { serveRole, untilLifelineCut, type RoleHandle } from "./role.ts";

test("untilSignal resolves on the first signal and keeps later ones from killing the process", async () => {
  await using child = spawnBun(join(REPO_ROOT, "test/fixtures/signal-child.ts"));
  await child.readLine((l) => l === "ready");
  child.proc.kill("SIGTERM");
  await child.readLine((l) => l === "first SIGTERM");
  child.proc.kill("SIGINT");
  await child.readLine((l) => l === "repeat SIGINT");
  child.proc.kill("SIGTERM");
  await child.readLine((l) => l === "repeat SIGTERM");
  expect(child.proc.exitCode).toBeNull(); // still alive after three signals
});

test("untilStopSignal logs the first signal, resolves 0, and names a repeat with its note", async () => {
  await using child = spawnBun(join(REPO_ROOT, "test/fixtures/stop-signal-child.ts"));
  await child.readLine((l) => l === "ready");
  child.proc.kill("SIGTERM");
  await child.readLine((l) => l === "info: SIGTERM: shutting down");
  await child.readLine((l) => l === "code 0");
  child.proc.kill("SIGINT");
  await child.readLine((l) => l === "warn: SIGINT again: already shutting down (note)");
});

function fakeRole(ready: Promise<void>) {
  let closes = 0;
  const close = async () => void closes++;
  const role: RoleHandle = { ready, ports: {}, close, [Symbol.asyncDispose]: close };
  return { role, closes: () => closes };
}
function capturingLogger() {
  const lines: string[] = [];
  return { logger: createConsola({ level: 4, reporters: [{ log: (o) => lines.push(`${o.type}: ${o.args.join(" ")}`) }] }), lines };
}

describe("serveRole", () => {
  test("a rejected ready: the reason is logged, the role closed, exit code 1", async () => {
    const { role, closes } = fakeRole(Promise.reject(new Error("replay socket exploded")));
    const { logger, lines } = capturingLogger();
    expect(await serveRole(role, { name: "events", logger, stops: [new Promise<number>(() => {})] })).toBe(1);
    expect(lines).toEqual(["error: events: stopping: replay socket exploded"]);
    expect(closes()).toBe(1);
  });

  test("a stop source ends it with its exit code (after ready or before), closing the role", async () => {
    const { logger, lines } = capturingLogger();
    const ready = fakeRole(Promise.resolve());
    expect(await serveRole(ready.role, { name: "events", logger, stops: [Promise.resolve(0)] })).toBe(0);
    expect(ready.closes()).toBe(1);
    const pending = fakeRole(new Promise<void>(() => {}));
    expect(await serveRole(pending.role, { name: "events", logger, stops: [new Promise<number>(() => {}), Promise.resolve(3)] })).toBe(3);
    expect(pending.closes()).toBe(1);
    expect(lines).toEqual([]);
  });
});

describe("untilLifelineCut", () => {
  const stream = () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    return { stream: new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) }), controller: () => controller };
  };

  test("resolves with 1 when the stdin lifeline ends, not before (bytes on it are ignored)", async () => {
    const { logger, lines } = capturingLogger();
    const s = stream();
    let settled: number | undefined;
    const cut = untilLifelineCut(logger, { KVCR_LIFELINE: "stdin" }, () => s.stream).then((code) => (settled = code));
    s.controller().enqueue(new Uint8Array([1, 2]));
    await Bun.sleep(0);
    expect(settled).toBeUndefined();
    s.controller().close();
    expect(await cut).toBe(1);
    expect(lines).toEqual(["warn: the supervising parent is gone (stdin lifeline closed): shutting down"]);
  });

  test("without KVCR_LIFELINE=stdin, stdin is not touched", async () => {
    const { logger } = capturingLogger();
    let read = false;
    void untilLifelineCut(logger, {}, () => ((read = true), stream().stream));
    expect(read).toBe(false);
  });
});
