// Drives test/integration/vllm-publisher.mjs (real libzmq + @msgpack/msgpack under Node) from Bun
// tests: one request per line, replies matched by id.
import { spawnChild, withTimeout } from "../harness.ts";
import { readLines } from "../lines.ts";

const SCRIPT = new URL("./vllm-publisher.mjs", import.meta.url).pathname;

export type WireHash = { u: string } | { i: string } | { b: string };
export interface WireEvent {
  type: "BlockStored" | "BlockRemoved" | "AllBlocksCleared";
  block_hashes?: WireHash[];
  parent_block_hash?: WireHash | null;
  token_ids?: number[];
  block_size?: number;
  medium?: string | null;
  ownership?: string;
}

export class VllmPublisher implements AsyncDisposable {
  private readonly child = spawnChild(["node", SCRIPT], { stdin: "pipe", stderr: "inherit" });
  private readonly proc = this.child.proc;
  private next = 1;
  private readonly pending = new Map<number, (r: Record<string, unknown>) => void>();
  private ready!: () => void;
  private readonly readyP = new Promise<void>((r) => (this.ready = r));

  private constructor() {
    void (async () => {
      for await (const line of readLines(this.proc.stdout)) {
        if (!line.trim()) continue;
        const msg = JSON.parse(line) as { event?: string; req?: number };
        if (msg.event === "ready") this.ready();
        else if (msg.req !== undefined) {
          this.pending.get(msg.req)?.(msg);
          this.pending.delete(msg.req);
        }
      }
    })();
  }

  static async start(): Promise<VllmPublisher> {
    const p = new VllmPublisher();
    try {
      await withTimeout(p.readyP, 20_000, "the vLLM-style publisher (node) to start");
    } catch (e) {
      await p[Symbol.asyncDispose]();
      throw e;
    }
    return p;
  }

  async request(op: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const req = this.next++;
    const reply = new Promise<Record<string, unknown>>((r) => this.pending.set(req, r));
    this.proc.stdin.write(JSON.stringify({ req, op, ...args }) + "\n");
    this.proc.stdin.flush();
    const r = await withTimeout(reply, 15_000, `publisher ${op}`);
    if (r.error) throw new Error(`publisher ${op}: ${String(r.error)}`);
    return r;
  }

  async open(id: string, opts: { replay?: boolean; layout?: "current" | "old"; topic?: string } = {}): Promise<{ pub: string; replay?: string }> {
    return (await this.request("open", { id, ...opts })) as { pub: string; replay?: string };
  }
  async waitSub(id: string): Promise<void> {
    await this.request("waitSub", { id });
  }
  /** Resolves once the replay ROUTER has answered `count` requests (end marker sent). */
  async waitReplay(id: string, count: number): Promise<void> {
    await this.request("waitReplay", { id, count });
  }
  async publish(id: string, events: WireEvent[], opts: { encoding?: "map" | "array"; skipLive?: boolean; dpRank?: number | null } = {}): Promise<number> {
    const batch: Record<string, unknown> = { events };
    if (opts.dpRank !== null) batch.dp_rank = opts.dpRank ?? 0;
    return (await this.request("publish", { id, batch, encoding: opts.encoding ?? "map", skipLive: opts.skipLive ?? false })).seq as number;
  }
  async raw(id: string, frames: Uint8Array[]): Promise<void> {
    await this.request("raw", { id, frames: frames.map((f) => Buffer.from(f).toString("base64")) });
  }
  /** Seq back to 0 and an empty replay buffer, as a restarted vLLM worker on the same endpoint. */
  async restart(id: string): Promise<void> {
    await this.request("restart", { id });
  }
  async oversized(id: string, size: number): Promise<void> {
    await this.request("oversized", { id, size });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.child[Symbol.asyncDispose]();
  }
}
