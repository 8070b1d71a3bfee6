// `bench --url A,B,…`: requests spread over several frontends in turn, as a round-robin load
// balancer would. A frontend that refuses the connection (nothing was sent, so sending again is
// safe) is skipped for a second and the request goes to the next one; refusals are counted per URL.
import type { RequestRecord } from "./send-request.ts";

/** Milliseconds a frontend that refused a connection is passed over. */
export const REFUSED_SKIP_MS = 1000;

export class FrontendRotation {
  private next = 0;
  private readonly downUntil: number[];
  /** Connections refused, per base URL (only those that refused). */
  readonly refusals = new Map<string, number>();

  constructor(
    /** Base URLs (what the refusals are counted under). */
    readonly urls: readonly string[],
    private readonly now: () => number,
  ) {
    if (urls.length === 0) throw new RangeError("a rotation needs at least one URL");
    this.downUntil = urls.map(() => -Infinity);
  }

  /** Sends through the next frontend in turn (`attempt` gets its base URL), past any that refuses. */
  async send(attempt: (baseUrl: string) => Promise<RequestRecord>): Promise<RequestRecord> {
    let rec: RequestRecord | undefined;
    for (let tries = 0; tries < this.urls.length; tries++) {
      const i = this.pick();
      rec = await attempt(this.urls[i]!);
      if (!refused(rec)) return rec;
      this.refusals.set(this.urls[i]!, (this.refusals.get(this.urls[i]!) ?? 0) + 1);
      this.downUntil[i] = this.now() + REFUSED_SKIP_MS;
    }
    return rec!; // every frontend refused: the request fails as a connection error
  }

  /** What the run's result says about the refusals (one line per frontend that refused). */
  warnings(): string[] {
    return [...this.refusals].map(([url, n]) => `frontend ${url} refused ${n} connection(s): its requests went to the next frontend`);
  }

  /** The next frontend in turn that is not passed over (or simply the next, when all are). */
  private pick(): number {
    const n = this.urls.length;
    const t = this.now();
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      if (this.downUntil[i]! <= t) {
        this.next = i + 1;
        return i;
      }
    }
    return this.next++ % n;
  }
}

/** A connection the server refused: the request never left this machine's socket. */
function refused(rec: RequestRecord): boolean {
  return !rec.ok && rec.errorKind === "connection" && rec.error !== undefined && /ECONNREFUSED|Connection refused/i.test(rec.error);
}
