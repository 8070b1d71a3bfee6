// Drives test/integration/zmq-peer.mjs (real libzmq under Node) from Bun tests and benches:
// request/response over stdin/stdout JSON lines, received messages queued per socket id.
import { createHash } from "node:crypto";
import { spawnChild, withTimeout, type SpawnedChild } from "../harness.ts";
import { readLines } from "../lines.ts";

export type FrameSpec = { text: string } | { b64: string } | { pattern: { size: number; seed: number } };
export type FrameReport = { b64: string } | { size: number; sha256: string };

const PEER_SCRIPT = new URL("./zmq-peer.mjs", import.meta.url).pathname;

export function patternBytes(size: number, seed: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 255;
  return b;
}

/** The same digest the peer prints for a frame it received. */
export function reportOf(frame: Uint8Array): FrameReport {
  if (frame.length <= 1024) return { b64: Buffer.from(frame).toString("base64") };
  return { size: frame.length, sha256: createHash("sha256").update(frame).digest("hex") };
}

export const text = (s: string): FrameSpec => ({ text: s });
export const bytesSpec = (b: Uint8Array): FrameSpec => ({ b64: Buffer.from(b).toString("base64") });

interface Reply {
  req: number;
  ok?: boolean;
  error?: string;
  [k: string]: unknown;
}

export class ZmqPeer implements AsyncDisposable {
  private readonly child: SpawnedChild<"pipe", "pipe", "pipe">;
  private readonly proc: SpawnedChild<"pipe", "pipe", "pipe">["proc"];
  private nextReq = 1;
  private readonly pending = new Map<number, (r: Reply) => void>();
  private readonly inbox = new Map<string, FrameReport[][]>();
  private readonly wakeups: (() => void)[] = [];
  private ready!: () => void;
  private readonly readyPromise = new Promise<void>((r) => (this.ready = r));
  private stderr = "";
  /** libzmq version the peer reported at startup, e.g. "4.3.5". */
  libzmqVersion = "";

  private constructor() {
    this.child = spawnChild(["node", PEER_SCRIPT], { stdin: "pipe" });
    this.proc = this.child.proc;
    void this.readStdout();
    void this.readStderr();
  }

  private async readStderr(): Promise<void> {
    const decoder = new TextDecoder();
    for await (const chunk of this.proc.stderr) this.stderr += decoder.decode(chunk);
  }

  static async start(): Promise<ZmqPeer> {
    const peer = new ZmqPeer();
    try {
      await withTimeout(Promise.race([peer.readyPromise, peer.proc.exited.then((c) => { throw new Error(`zmq peer exited with ${c}: ${peer.stderr}`); })]), 20_000, "the libzmq peer (node) to start");
    } catch (e) {
      await peer.kill();
      throw e;
    }
    return peer;
  }

  get pid(): number {
    return this.proc.pid;
  }

  async request(op: string, args: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<Reply> {
    const req = this.nextReq++;
    const reply = new Promise<Reply>((resolve) => this.pending.set(req, resolve));
    this.proc.stdin.write(JSON.stringify({ req, op, ...args }) + "\n");
    this.proc.stdin.flush();
    const r = await withTimeout(reply, timeoutMs, `libzmq peer reply to ${op}`);
    if (r.error) throw new Error(`libzmq peer ${op} failed: ${r.error}`);
    return r;
  }

  socket(id: string, type: "pub" | "sub" | "router" | "dealer", options: Record<string, unknown> = {}) {
    return this.request("socket", { id, type, options });
  }
  async bind(id: string, endpoint = "tcp://127.0.0.1:*"): Promise<string> {
    return (await this.request("bind", { id, endpoint })).endpoint as string;
  }
  connect(id: string, endpoint: string) {
    return this.request("connect", { id, endpoint });
  }
  subscribe(id: string, topic: FrameSpec) {
    return this.request("subscribe", { id, topic });
  }
  send(id: string, frames: FrameSpec[], repeat = 1) {
    return this.request("send", { id, frames, repeat }, 30_000);
  }
  /** Publishes `frames` every few ms until stopPump (slow-joiner synchronisation). */
  pump(id: string, frames: FrameSpec[], intervalMs = 5) {
    return this.request("pump", { id, frames, intervalMs });
  }
  stopPump(id: string) {
    return this.request("stopPump", { id });
  }
  close(id: string) {
    return this.request("close", { id });
  }

  /** Next message received by socket `id` (optionally the next one matching `accept`). */
  async nextMessage(id: string, timeoutMs = 10_000, accept: (m: FrameReport[]) => boolean = () => true): Promise<FrameReport[]> {
    const find = (): FrameReport[] | undefined => {
      const q = this.inbox.get(id) ?? [];
      while (q.length > 0) {
        const m = q.shift()!;
        if (accept(m)) return m;
      }
      return undefined;
    };
    return withTimeout(
      (async () => {
        for (;;) {
          const m = find();
          if (m) return m;
          await new Promise<void>((r) => this.wakeups.push(r));
        }
      })(),
      timeoutMs,
      `a message on libzmq socket ${id}`,
    );
  }

  /** Kills the node process and waits for it to exit (safe to call twice). */
  async kill(): Promise<void> {
    await this.child[Symbol.asyncDispose]();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.kill();
  }

  private async readStdout(): Promise<void> {
    for await (const line of readLines(this.proc.stdout)) if (line.trim()) this.onLine(JSON.parse(line));
  }

  private onLine(msg: { event?: string; req?: number; id?: string; frames?: FrameReport[]; zmq?: string }): void {
    if (msg.event === "ready") {
      this.libzmqVersion = msg.zmq ?? "";
      return this.ready();
    }
    if (msg.event === "message") {
      const q = this.inbox.get(msg.id!) ?? [];
      q.push(msg.frames!);
      this.inbox.set(msg.id!, q);
      for (const w of this.wakeups.splice(0)) w();
      return;
    }
    if (msg.req !== undefined) {
      const resolve = this.pending.get(msg.req);
      this.pending.delete(msg.req);
      resolve?.(msg as Reply);
    }
  }
}
