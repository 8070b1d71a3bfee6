// One child process `up` started, as the supervisor sees it: its exit (code or signal, and why it
// was killed when `up` killed it), its output pumped line by line to `up`'s output and log file
// with rings of the last lines for error messages, and signals to its whole process group.
import type { WriteStream } from "node:fs";

export interface ChildExit {
  name: string;
  pid: number;
  code: number | null;
  signal: string | null;
  /** Set when the child was under a restart policy and exceeded it: restarts done in the window. */
  restarts?: number;
  /** Its last stderr lines, when `restarts` is set. */
  stderrTail?: string[];
  /** Set when `up` killed it for not answering its liveness probe: how long it had been silent (ms). */
  hungMs?: number;
}

/** "exited with code 2" / "was killed by SIGKILL" / "… (hung: no answer to its liveness probe for 5.2 s)". */
export function describeExit(e: Pick<ChildExit, "code" | "signal" | "hungMs">): string {
  const how = e.signal ? `was killed by ${e.signal}` : `exited with code ${e.code}`;
  return e.hungMs === undefined ? how : `${how} (hung: no answer to its liveness probe for ${(e.hungMs / 1000).toFixed(1)} s)`;
}

export class SupervisedChild {
  private readonly tailBuf: string[] = [];
  private readonly stderrBuf: string[] = [];
  /** Set by killHung(): the exit then says why `up` killed it. */
  private hungMs: number | undefined;
  readonly exited: Promise<ChildExit>;
  /** Resolves once both output streams are fully read (the last lines are written). */
  readonly drained: Promise<void>;

  constructor(
    readonly name: string,
    readonly proc: Bun.Subprocess<"pipe", "pipe", "pipe">,
    label: string | ((line: string) => string),
    write: (text: string) => void,
    log: WriteStream | undefined,
    tailLines: number,
  ) {
    this.exited = proc.exited.then(
      (): ChildExit => ({
        name,
        pid: proc.pid,
        code: proc.signalCode ? null : proc.exitCode,
        signal: proc.signalCode === null ? null : String(proc.signalCode),
        ...(this.hungMs !== undefined ? { hungMs: this.hungMs } : {}),
      }),
    );
    const pump = async (stream: ReadableStream<Uint8Array>, isStderr: boolean) => {
      const decoder = new TextDecoder();
      let buf = "";
      const emit = (line: string) => {
        for (const ring of isStderr ? [this.tailBuf, this.stderrBuf] : [this.tailBuf]) {
          ring.push(line);
          if (ring.length > tailLines) ring.shift();
        }
        write(`${typeof label === "string" ? label + line : label(line)}\n`);
        log?.write(`${line}\n`);
      };
      try {
        for await (const chunk of stream) {
          buf += decoder.decode(chunk, { stream: true });
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            emit(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        }
      } catch {
        // The pipe broke with the child: what was read is kept.
      }
      if (buf.length > 0) emit(buf);
    };
    this.drained = Promise.all([pump(proc.stdout, false), pump(proc.stderr, true)]).then(() => {});
  }

  get pid(): number {
    return this.proc.pid;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** The last lines the child wrote (stdout and stderr interleaved as read). */
  tail(): string[] {
    return [...this.tailBuf];
  }

  /** The last lines the child wrote to stderr. */
  stderrTail(): string[] {
    return [...this.stderrBuf];
  }

  /**
   * It stopped answering its liveness probe for `silentMs`: SIGKILL, since a stopped (SIGSTOP) or
   * wedged process cannot act on SIGTERM; its exit carries `hungMs`.
   */
  killHung(silentMs: number): void {
    if (!this.running) return;
    this.hungMs = silentMs;
    this.signal("SIGKILL");
  }

  /** Signals the child's whole process group (it leads one), or the child alone if that fails. */
  signal(sig: NodeJS.Signals): void {
    if (!this.running) return;
    try {
      process.kill(-this.proc.pid, sig);
    } catch {
      try {
        this.proc.kill(sig);
      } catch {
        // Already gone.
      }
    }
  }
}
