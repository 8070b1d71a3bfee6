// Calling a watch's listener, for every backend: a listener that throws, or returns a promise that
// rejects (an async listener typed as DiscoveryListener), is logged and the watch goes on.
import type { DiscoveryEvent, DiscoveryListener, DiscoveryLogger } from "./store.ts";

export function notifyListener(listener: DiscoveryListener, event: DiscoveryEvent, prefix: string, logger: DiscoveryLogger): void {
  const failed = (err: unknown) => logger.warn(`discovery: watch listener for prefix ${JSON.stringify(prefix)} threw: ${(err as Error)?.message ?? String(err)}`);
  try {
    const result: unknown = listener(event);
    if (result instanceof Promise) result.catch(failed);
  } catch (err) {
    failed(err);
  }
}
