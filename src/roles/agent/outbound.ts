// The agent's normalized router-event stream: one PUB on the agent's
// events port, topic "", batched per tick by RouterEventPub (src/roles/shared/routing/router-event-pub.ts).
// flush() sends now: the snapshot and the attachment records stamp the cursor that reflects
// everything queued before them.
import type { Logger } from "../../lib/logger.ts";
import { formatEndpoint, parseEndpoint, PubSocket } from "../../transport/zmtp/index.ts";
import { RouterEventPub } from "../shared/routing/router-event-pub.ts";

/** Send HWM per subscriber, as the raw PUBs (vLLM's default). */
export const OUTBOUND_SEND_HWM = 100_000;

export class RouterEventOutbound extends RouterEventPub implements AsyncDisposable {
  readonly endpoint: string;
  readonly port: number;

  constructor(host: string, port: number, logger: Logger) {
    const pub = new PubSocket({ logger, sendHighWaterMark: OUTBOUND_SEND_HWM });
    let endpoint: string;
    try {
      endpoint = pub.bind(formatEndpoint(host.replace(/^\[(.*)\]$/, "$1"), port));
    } catch (e) {
      pub.close();
      throw e;
    }
    super(pub, "", logger, "router events");
    this.endpoint = endpoint;
    this.port = parseEndpoint(endpoint, "connect").port;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }
}
