import { describe, expect, test } from "bun:test";
import { FrontendRotation, REFUSED_SKIP_MS } from "./frontend-rotation.ts";
import type { RequestRecord } from "./send-request.ts";

const ok = (url: string): RequestRecord => ({ ok: true, sentMs: 0, ttftMs: 1, itlMs: [], e2elMs: 1, promptTokens: 1, outputTokens: 1, worker: url });
const refused = (url: string): RequestRecord => ({ ok: false, errorKind: "connection", error: `${url}: ECONNREFUSED: Unable to connect`, sentMs: 0, ttftMs: NaN, itlMs: [], e2elMs: 0, promptTokens: 1, outputTokens: 0 });
const cut = (url: string): RequestRecord => ({ ...refused(url), error: `${url}: socket closed` });

describe("frontend rotation", () => {
  test("each frontend in turn", async () => {
    const r = new FrontendRotation(["a", "b", "c"], () => 0);
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) seen.push((await r.send(async (u) => ok(u))).worker!);
    expect(seen).toEqual(["a", "b", "c", "a", "b", "c"]);
  });

  test("one that refuses is passed over for a while and counted; the request goes to the next", async () => {
    let t = 0;
    const r = new FrontendRotation(["a", "b"], () => t);
    const down = new Set(["b"]);
    const attempt = async (u: string) => (down.has(u) ? refused(u) : ok(u));
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) seen.push((await r.send(attempt)).worker!);
    expect(seen).toEqual(["a", "a", "a", "a"]);
    expect([...r.refusals]).toEqual([["b", 1]]);
    // Past the skip, b is tried again: it is back.
    t = REFUSED_SKIP_MS + 1;
    down.clear();
    seen.length = 0;
    for (let i = 0; i < 2; i++) seen.push((await r.send(attempt)).worker!);
    expect(seen.sort()).toEqual(["a", "b"]);
    expect(r.warnings()).toEqual(["frontend b refused 1 connection(s): its requests went to the next frontend"]);
  });

  test("a failure other than a refusal is the request's own (never sent again); all refusing, it fails", async () => {
    const r = new FrontendRotation(["a", "b"], () => 0);
    const tries: string[] = [];
    expect((await r.send(async (u) => (tries.push(u), cut(u)))).ok).toBe(false);
    expect(tries).toEqual(["a"]);
    tries.length = 0;
    expect((await r.send(async (u) => (tries.push(u), refused(u)))).errorKind).toBe("connection");
    expect(tries).toEqual(["b", "a"]);
  });
});
