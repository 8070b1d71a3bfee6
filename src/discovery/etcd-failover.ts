// What the etcd store does with its members' probes (etcd-member-probe.ts): leaves a member in use
// that stops answering (or is cut off from the leader) for one that does, has every watch list
// again there, logs quorum loss, and after a member answers again keeps leases and watches
// watchful for a moment (an old leader of etcd 3.4, before its late-2023 fix, revokes as it
// resumes every lease it saw lapse while stopped, though their owners kept them alive elsewhere).
import type { EtcdClient } from "./etcd-client.ts";
import type { EtcdLease } from "./etcd-lease.ts";
import { EtcdMemberProbe } from "./etcd-member-probe.ts";
import { memberToUse, memberViews, membersDegradedReason, quorumOf, type MemberView } from "./etcd-members.ts";
import type { EtcdPrefixWatch } from "./etcd-watch.ts";
import type { DiscoveryLogger } from "./store.ts";

/** After a member answers again: how long leases renew often and watches hold back expiries. */
const RESUME_WATCH_MS = 5_000;
/** How long a watch holds back a lease expiry meanwhile, for its owner to put the record back. */
const EXPIRY_HOLD_MS = 3_000;

export interface FailoverDeps {
  endpoints: readonly string[];
  client: EtcdClient;
  logger: DiscoveryLogger;
  /** A member that leaves a probe unanswered this long is silent (also the cut-off limit). */
  memberTimeoutMs: number;
  probeIntervalMs: number;
  watches(): Iterable<EtcdPrefixWatch>;
  leases(): Iterable<Promise<EtcdLease>>;
}

export class EtcdFailover {
  private readonly probe: EtcdMemberProbe;
  /** Times the member in use was left. */
  failovers = 0;
  private quorumLost = false;
  /** Wall ms until which a member's resume may still bring revoked leases. */
  private resumeWatchUntilMs = 0;
  private closed = false;

  constructor(private readonly deps: FailoverDeps) {
    this.probe = new EtcdMemberProbe({
      endpoints: deps.endpoints,
      intervalMs: deps.probeIntervalMs,
      timeoutMs: deps.memberTimeoutMs,
      logger: deps.logger,
      onSettled: () => this.review(),
      onResumed: () => {
        this.resumeWatchUntilMs = Date.now() + RESUME_WATCH_MS;
        for (const lease of deps.leases()) void lease.then((l) => l.renewOftenFor(RESUME_WATCH_MS), () => {});
      },
    });
    this.probe.start();
  }

  /** How long a watch holds back a lease expiry now: while a member is silent or just resumed. */
  expiryHoldMs(): number {
    return Date.now() < this.resumeWatchUntilMs || this.probe.members.some((m) => m.answering === false) ? EXPIRY_HOLD_MS : 0;
  }

  /** The members' part of the store's status. */
  status(): { inUseSilent: boolean; inUseError?: string; members: MemberView[]; quorum?: boolean; degradedReason?: string } {
    const members = this.probe.members;
    const inUse = members[this.deps.client.inUse];
    const quorum = quorumOf(members);
    return {
      inUseSilent: inUse?.answering === false,
      ...(inUse?.answering === false ? { inUseError: `etcd member ${inUse.endpoint} does not answer (${inUse.lastError})` } : {}),
      members: memberViews(members),
      ...(quorum !== undefined ? { quorum } : {}),
      degradedReason: membersDegradedReason(members, this.deps.client.inUse),
    };
  }

  /**
   * After each probe: tells the client which members answer, and leaves the member in use when it
   * does not answer (or is cut off from the leader) for one that does. Requests under way on it
   * go on with the new member (the lease is kept alive through it), and every watch lists its
   * prefix again and watches from the listed revision, so nothing it missed stays missed.
   */
  private review(): void {
    if (this.closed) return;
    const { client, logger, memberTimeoutMs } = this.deps;
    const members = this.probe.members;
    members.forEach((m, i) => client.setAnswering(i, m.answering !== false));
    const quorum = quorumOf(members);
    if (quorum === false && !this.quorumLost) logger.warn(`discovery: ${membersDegradedReason(members, client.inUse)}`);
    if (quorum === true && this.quorumLost) logger.warn("discovery: etcd quorum is back");
    this.quorumLost = quorum === false;
    const now = Date.now();
    const from = client.inUse;
    const to = memberToUse(members, from, now, memberTimeoutMs);
    if (to !== from) {
      const why = this.leftWhy(from);
      logger.warn(`discovery: ${why}; moving to ${members[to]!.endpoint}, listing every watch again and watching from the listed revision`);
      this.failovers++;
      client.switchTo(to);
      for (const w of this.deps.watches()) w.requestResync(why, true, false);
    }
    // A stream opened on a member the client has moved off since (a request failed over) may ride
    // a member that is now silent or cut off: it lists again too, on the member in use.
    for (const w of this.deps.watches()) {
      const on = w.streamMember;
      if (on === undefined || on === client.inUse || memberToUse(members, on, now, memberTimeoutMs) === on) continue;
      const why = this.leftWhy(on);
      logger.warn(`discovery: ${why} under watch ${JSON.stringify(w.prefix)}; listing it again on ${members[client.inUse]!.endpoint}`);
      w.requestResync(why, true, false);
    }
  }

  private leftWhy(index: number): string {
    const m = this.probe.members[index]!;
    return `etcd member ${m.endpoint} ${m.answering ? "has no leader" : "does not answer"} (${m.lastError ?? "?"})`;
  }

  close(): void {
    this.closed = true;
    this.probe.close();
  }
}
