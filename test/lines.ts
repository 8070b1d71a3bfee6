// Line-oriented reading of a byte stream (a child's stdout, our own stdin) for tests and bench/
// scripts: one splitter, and a queue of the lines seen so far that a caller can wait on with a
// bounded timeout. Platform only (no src/ imports), so bench/ and test/ can both use it.

/**
 * Yields each "\n"-terminated line of `stream`, without the "\n", decoded as UTF-8 (also when a
 * character spans two chunks). A last fragment with no "\n" is not a line and is dropped: a child
 * killed mid-write must not hand its reader half a JSON object.
 */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += decoder.decode(chunk, { stream: true });
    let start = 0;
    let nl: number;
    while ((nl = buf.indexOf("\n", start)) >= 0) {
      yield buf.slice(start, nl);
      start = nl + 1;
    }
    buf = buf.slice(start);
  }
}

/**
 * Reads `stream` in the background into `lines` (every line in order, mapped by `parse`); next()
 * waits for a line without polling. `onLine` sees each line as it arrives (e.g. to print progress).
 */
export class LineQueue<T = string> {
  /** Every line so far, in arrival order (next() does not remove them from here). */
  readonly lines: T[] = [];
  /**
   * Resolves once the stream has ended. Rejects if reading or `parse` failed, and is left unhandled
   * on purpose: a line that does not parse is a bug in the child and must fail the run loudly.
   */
  readonly ended: Promise<void>;
  /** Indexes into `lines` that next() has handed out, at or after `firstUntaken` (all before it are). */
  private readonly taken = new Set<number>();
  private firstUntaken = 0;
  private readonly waiters = new Set<() => void>();
  private isEnded = false;
  private failure: Error | undefined;

  constructor(stream: ReadableStream<Uint8Array>, parse: (line: string) => T = (line) => line as T, onLine?: (line: T) => void) {
    this.ended = (async () => {
      try {
        for await (const raw of readLines(stream)) {
          const line = parse(raw);
          onLine?.(line);
          this.lines.push(line);
          for (const wake of this.waiters) wake();
        }
      } catch (err) {
        this.failure = err instanceof Error ? err : new Error(String(err));
        throw err;
      } finally {
        this.isEnded = true;
        for (const wake of this.waiters) wake();
      }
    })();
  }

  /**
   * The first line not handed out before that satisfies `match`, in arrival order. Rejects after
   * `timeoutMs`, or as soon as the stream ends without one; `what` names the awaited line in the
   * error and is read when the error is made (so it can show the child's stderr up to then).
   */
  next(match: (line: T) => boolean = () => true, timeoutMs = 10_000, what: string | (() => string) = "a line"): Promise<T> {
    const describe = () => (typeof what === "string" ? what : what());
    return new Promise<T>((resolve, reject) => {
      let scanned = this.firstUntaken;
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        outcome();
      };
      // Runs now and after every new line; removed from `waiters` before it settles, so a line
      // arriving later is never taken by a wait that is already over.
      const check = () => {
        try {
          for (; scanned < this.lines.length; scanned++) {
            if (scanned < this.firstUntaken || this.taken.has(scanned)) continue;
            const line = this.lines[scanned] as T;
            if (!match(line)) continue;
            this.taken.add(scanned);
            while (this.taken.delete(this.firstUntaken)) this.firstUntaken++;
            return settle(() => resolve(line));
          }
        } catch (err) {
          return settle(() => reject(err)); // a throwing `match` fails this wait, not the reader
        }
        if (this.isEnded) settle(() => reject(new Error(`the stream ended before ${describe()}${this.failure ? ` (${this.failure.message})` : ""}`)));
      };
      const timer = setTimeout(() => settle(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${describe()}`))), timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}
