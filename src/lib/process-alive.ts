// Whether a pid on this host is a live process (signal 0). EPERM means alive, another user's.
import { hostname } from "node:os";

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}

/**
 * Whether a discovery record's writer may still be alive: on the file backend (one host) its pid
 * says; on etcd only when the record names this host (a pid elsewhere means nothing here), else it
 * is taken as alive and its lease decides.
 */
export function recordOwnerAlive(backend: "file" | "etcd", owner: { pid: number; host?: string }): boolean {
  if (backend === "file") return processAlive(owner.pid);
  return owner.host === undefined || owner.host !== hostname() || processAlive(owner.pid);
}
