// Whether a pid on this host is a live process (signal 0). EPERM means alive, another user's.

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}
