// The frontend's SUB on one router-event stream (a worker's relay in direct mode, an agent's
// outbound stream in state-agent mode): every topic, no receive limit (a dropped batch would be a
// cursor gap), each message decoded as [topic, cursor, payload] (protocol/router-events.ts).
import type { Logger } from "../../lib/logger.ts";
import { decodeRouterEventMessage, type RouterEvent } from "../../protocol/router-events.ts";
import { SubSocket } from "../../transport/zmtp/index.ts";

export interface RouterEventHandlers {
  /** Whether the subscription is still wanted; messages arriving after it is not are ignored. */
  current(): boolean;
  batch(cursor: bigint, events: RouterEvent[]): void;
  undecodable(err: Error): void;
}

/**
 * A router-event batch holds one publisher tick: after an agent restart every slot's state dump
 * can land in one tick (tens of MB with many slots). ZMTP's 16 MiB default would reset the
 * connection on it, and every reconnect re-syncs from a snapshot: our own publisher, so allow more.
 */
export const ROUTER_EVENT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

export function subscribeRouterEvents(endpoint: string, logger: Logger, on: RouterEventHandlers): SubSocket {
  const sub = new SubSocket({ logger, receiveHighWaterMark: 0, maxMessageBytes: ROUTER_EVENT_MAX_MESSAGE_BYTES });
  sub.onMessage((frames) => {
    if (!on.current()) return;
    let message: { cursor: bigint; events: RouterEvent[] };
    try {
      message = decodeRouterEventMessage(frames);
    } catch (err) {
      on.undecodable(err as Error);
      return;
    }
    on.batch(message.cursor, message.events);
  });
  sub.subscribe("");
  sub.connect(endpoint);
  return sub;
}
