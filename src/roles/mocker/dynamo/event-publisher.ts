// One (worker, rank)'s KV events on Dynamo's ZeroMQ event plane: a PUB of its own, a publisher id
// ≤ 2^53−1, message sequences from 0 and RouterEvent ids from 1 (one count over both tiers), the
// device tier and the host tier as Dynamo's mocker names them (protocol/dynamo/event-plane.ts has
// the bytes). The engine's EventOutlet.
import type { KvEvent } from "../../../core/kv/kv-events.ts";
import type { Logger } from "../../../lib/logger.ts";
import { encodeEventMessage, encodeRouterEvents, type DynamoRouterEvent } from "../../../protocol/dynamo/event-plane.ts";
import { KV_EVENTS_TOPIC } from "../../../protocol/dynamo/discovery-records.ts";
import { MsgpackWriter } from "../../../protocol/msgpack.ts";
import { PubSocket } from "../../../transport/zmtp/index.ts";
import { bindOrClose } from "../bind.ts";
import type { EventOutlet } from "../rank-engine.ts";
import { RAW_SEND_HWM } from "../rank-publisher.ts";

/** A random id in [1, 2^53−1], as Dynamo masks its publisher ids (JSON-safe). */
export function jsonSafeId(): number {
  const [hi, lo] = crypto.getRandomValues(new Uint32Array(2));
  return (hi! & 0x1f_ffff) * 2 ** 32 + lo! || 1;
}

export class DynamoEventPublisher implements EventOutlet {
  readonly publisherId = jsonSafeId();
  readonly endpoint: string;
  private readonly pub: PubSocket;
  private sequence = 0;
  private nextEventId = 1;
  private readonly writer = new MsgpackWriter();
  private readonly envelopeWriter = new MsgpackWriter();
  published = 0;

  constructor(
    host: string,
    readonly workerId: number,
    readonly dpRank: number,
    logger: Logger,
  ) {
    this.pub = new PubSocket({ logger, sendHighWaterMark: RAW_SEND_HWM });
    this.endpoint = bindOrClose(this.pub, host, 0).endpoint;
  }

  publish(events: readonly KvEvent[], _tsSeconds: number): void {
    const items: DynamoRouterEvent[] = [];
    // Host stores go without their start position (Dynamo's mocker writes it; vLLM's events, and so
    // the engine's, do not carry it): the router indexes them by their hashes, as device stores.
    for (const event of events) items.push({ eventId: this.nextEventId++, tier: event.tier === "device" ? "device" : "host_pinned", event });
    if (items.length === 0) return;
    const payload = encodeRouterEvents(this.writer, this.workerId, this.dpRank, items);
    this.pub.send(encodeEventMessage(this.envelopeWriter, KV_EVENTS_TOPIC, this.publisherId, this.sequence++, Date.now(), payload));
    this.published++;
  }

  subscriberCount(): number {
    return this.pub.subscriberCount();
  }

  close(): void {
    this.pub.close();
  }
}
