// Headless Chromium (Debian's `chromium`) driven over the DevTools protocol, for tests of pages
// we generate: load a file, collect console errors and uncaught exceptions, evaluate an
// expression, take a PNG screenshot. Every process and socket is closed on dispose.
import { existsSync } from "node:fs";
import { inflateSync } from "node:zlib";
import { makeShortTempDir, spawnChild, type TempDir } from "./harness.ts";

export const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));

export interface PageRun extends AsyncDisposable {
  /** Console errors, uncaught exceptions and error log entries seen so far. */
  readonly errors: string[];
  evaluate<T>(expression: string): Promise<T>;
  screenshotPng(): Promise<Uint8Array>;
}

export async function openPage(url: string, opts: { width?: number; height?: number; timeoutMs?: number } = {}): Promise<PageRun> {
  if (!CHROMIUM) throw new Error("chromium is not installed (apt-get install -y chromium)");
  const timeoutMs = opts.timeoutMs ?? 30_000;
  // A short path whatever TMPDIR is: Chromium's singleton socket lives in it (108-byte limit).
  const profile: TempDir = await makeShortTempDir("kvcr-chromium-");
  const child = spawnChild(
    [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", `--user-data-dir=${profile.path}`, "--remote-debugging-port=0", `--window-size=${opts.width ?? 1000},${opts.height ?? 2000}`, "about:blank"],
    // Chromium makes its own org.chromium.Chromium.* directory under TMPDIR: keep it inside the profile.
    { stdout: "ignore", env: { TMPDIR: profile.path } },
  );
  const { proc } = child;
  let ws: WebSocket | undefined;
  const close = async () => {
    ws?.close();
    // The group: chromium's renderer and GPU helpers go with it, and none keeps the profile busy.
    await child[Symbol.asyncDispose]();
    await profile[Symbol.asyncDispose]();
  };
  try {
    const port = await devtoolsPort(proc.stderr, timeoutMs);
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
    const page = targets.find((t) => t.type === "page");
    if (!page) throw new Error("chromium has no page target");
    ws = new WebSocket(page.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws!.onopen = () => resolve();
      ws!.onerror = () => reject(new Error("cannot connect to chromium's DevTools socket"));
    });
    const errors: string[] = [];
    const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
    const waiters: { method: string; resolve(): void }[] = [];
    let nextId = 1;
    ws.onmessage = (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: Record<string, any> };
      if (msg.id !== undefined) {
        const p = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) p?.reject(new Error(msg.error.message));
        else p?.resolve(msg.result);
        return;
      }
      const params = msg.params ?? {};
      if (msg.method === "Runtime.consoleAPICalled" && (params.type === "error" || params.type === "assert")) errors.push(`console.${params.type}: ${params.args?.map((a: any) => a.value ?? a.description).join(" ")}`);
      if (msg.method === "Runtime.exceptionThrown") errors.push(`exception: ${params.exceptionDetails?.exception?.description ?? params.exceptionDetails?.text}`);
      if (msg.method === "Log.entryAdded" && params.entry?.level === "error") errors.push(`log: ${params.entry.text} (${params.entry.url ?? ""})`);
      for (const w of waiters.splice(0)) if (w.method === msg.method) w.resolve();
      else waiters.push(w);
    };
    const send = (method: string, params: Record<string, unknown> = {}) =>
      new Promise<any>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        ws!.send(JSON.stringify({ id, method, params }));
      });
    const loaded = new Promise<void>((resolve) => waiters.push({ method: "Page.loadEventFired", resolve }));
    await Promise.all([send("Runtime.enable"), send("Log.enable"), send("Page.enable")]);
    await send("Page.navigate", { url });
    await withDeadline(loaded, timeoutMs, `the load event of ${url}`);
    return {
      errors,
      async evaluate<T>(expression: string) {
        const r = await send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
        if (r.exceptionDetails) throw new Error(`evaluate failed: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
        return r.result.value as T;
      },
      async screenshotPng() {
        const r = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true });
        return Uint8Array.from(Buffer.from(r.data as string, "base64"));
      },
      [Symbol.asyncDispose]: close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

async function devtoolsPort(stderr: ReadableStream<Uint8Array>, timeoutMs: number): Promise<number> {
  const decoder = new TextDecoder();
  let text = "";
  const reader = stderr.getReader();
  const found = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`chromium exited before DevTools listened: ${text}`);
      text += decoder.decode(value, { stream: true });
      const m = /DevTools listening on ws:\/\/[^:]+:(\d+)\//.exec(text);
      if (m) {
        reader.releaseLock();
        // Keep draining stderr so chromium never blocks on a full pipe.
        void (async () => {
          for await (const _ of stderr) void _;
        })().catch(() => {});
        return Number(m[1]);
      }
    }
  })();
  return withDeadline(found, timeoutMs, "chromium's DevTools port");
}

async function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium's screenshots are). */
export function decodePng(png: Uint8Array): { width: number; height: number; channels: number; pixels: Uint8Array } {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let at = 8;
  let width = 0, height = 0, channels = 0;
  const idat: Uint8Array[] = [];
  while (at < png.length) {
    const len = view.getUint32(at);
    const type = String.fromCharCode(...png.subarray(at + 4, at + 8));
    const data = png.subarray(at + 8, at + 8 + len);
    if (type === "IHDR") {
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      const depth = data[8], color = data[9], interlace = data[12];
      if (depth !== 8 || (color !== 2 && color !== 6) || interlace !== 0) throw new Error(`unsupported PNG: depth ${depth}, color type ${color}, interlace ${interlace}`);
      channels = color === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    at += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = pixels.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? pixels.subarray((y - 1) * stride, y * stride) : new Uint8Array(stride);
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? row[x - channels]! : 0;
      const b = prev[x]!;
      const c = x >= channels ? prev[x - channels]! : 0;
      let v = src[x]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      row[x] = v & 0xff;
    }
  }
  return { width, height, channels, pixels };
}
