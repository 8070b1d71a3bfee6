// One wording for a listen that failed, for every listener the project opens (ZMTP, HTTP, held
// ports): the OS's reason in plain words and what to do next, said once.
import { KvcrError } from "../lib/errors.ts";

/** Why `host:port` could not be listened on, from the error Bun.listen / Bun.serve threw. */
export function bindFailureReason(host: string, port: number, err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  switch (code) {
    case "EADDRINUSE":
      return `port ${port} is in use (another process, or another socket of this one, holds it); choose another port, or 0 to let the OS pick`;
    case "EADDRNOTAVAIL":
      return `${host} is not an address of this machine; use 127.0.0.1, 0.0.0.0 (every interface) or one of this machine's addresses`;
    case "EACCES":
      return `permission denied (ports below 1024 need privileges); choose a port ≥ 1024, or 0 to let the OS pick`;
    default:
      return err instanceof Error ? err.message : String(err);
  }
}

export function bindFailed(code: string, what: string, host: string, port: number, err: unknown): KvcrError {
  return new KvcrError(code, `cannot ${what} on ${host.includes(":") ? `[${host}]` : host}:${port}: ${bindFailureReason(host, port, err)}`, { cause: err });
}
