// CPU time of the calling thread alone (Linux CLOCK_THREAD_CPUTIME_ID through libc), for figures
// "per core": process CPU time adds the collector's and compiler's helper threads, and wall time
// adds whatever else the machine ran. undefined where libc or the clock is not there.
import { dlopen, FFIType, ptr } from "bun:ffi";

const CLOCK_THREAD_CPUTIME_ID = 3;

function open(): (() => number) | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const libc = dlopen("libc.so.6", { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
    const ts = new BigInt64Array(2);
    const at = ptr(ts);
    const read = () => {
      if (libc.symbols.clock_gettime(CLOCK_THREAD_CPUTIME_ID, at) !== 0) throw new Error("clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
      return Number(ts[0]) + Number(ts[1]) / 1e9;
    };
    read();
    return read;
  } catch {
    return undefined;
  }
}

/** Seconds of CPU this thread has used (a costly call, ~1–3 µs: read it around runs, not per operation). */
export const threadCpuSeconds: (() => number) | undefined = open();
