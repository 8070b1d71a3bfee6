// Batching "do this once the current tick's synchronous work is done" across many objects: one
// microtask per tick runs every object that asked, however many there are. The ZMTP send queues
// coalesce their writes this way, and the router-event relays their batches.

/**
 * Returns `later(item)`: `run(item)` happens in one shared microtask after the current synchronous
 * code, once per call. Callers keep their own "already scheduled" flag (a field check is cheaper on
 * the send path than a Set lookup here) and clear it in `run`.
 */
export function endOfTick<T>(run: (item: T) => void): (item: T) => void {
  let scheduled: T[] = [];
  let queued = false;
  const runScheduled = () => {
    const items = scheduled;
    scheduled = [];
    queued = false;
    for (const item of items) run(item);
  };
  return (item) => {
    scheduled.push(item);
    if (!queued) {
      queued = true;
      queueMicrotask(runScheduled);
    }
  };
}
