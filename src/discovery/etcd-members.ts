// Which etcd members answer, whether the cluster has quorum and which member to use, judged from
// each member's last status probe (etcd-member-probe.ts sends them). Pure: no sockets, no clock.
import type { MemberView } from "./store.ts";

export type { MemberView };

/** What the last probe of one `--etcd-endpoints` member showed. */
export interface MemberState {
  readonly endpoint: string;
  /** undefined until its first probe settles. */
  answering?: boolean;
  /** Its status named a leader (etcd leaves `leader` out, and says "no leader", while it has none). */
  hasLeader?: boolean;
  /** Wall ms since when it has answered without a leader; undefined while it has one. */
  leaderlessSinceMs?: number;
  /** Wall ms of its last answer. */
  lastAnswerMs?: number;
  /** Why its last probe failed, or what its status complained of. */
  lastError?: string;
}


export function memberViews(members: readonly MemberState[]): MemberView[] {
  return members.map((m) => ({
    endpoint: m.endpoint,
    answering: m.answering ?? null,
    ...(m.answering ? { leader: m.hasLeader === true } : {}),
    // A healthy member's old error is history; a silent or leaderless one's says why.
    ...(m.lastError !== undefined && !(m.answering && m.hasLeader) ? { lastError: m.lastError } : {}),
  }));
}

/** The fields of a `/v3/maintenance/status` reply the judgement reads. */
export interface StatusReply {
  leader?: string;
  errors?: string[];
}

/** A status reply read: whether the member knows a leader, and its complaint when it does not. */
export function readStatus(reply: StatusReply): { hasLeader: boolean; problem?: string } {
  const hasLeader = reply.leader !== undefined && reply.leader !== "0" && reply.leader !== "";
  const errors = (reply.errors ?? []).filter((e) => typeof e === "string" && e.length > 0);
  if (hasLeader) return errors.length > 0 ? { hasLeader, problem: errors.join("; ") } : { hasLeader };
  return { hasLeader, problem: errors.length > 0 ? errors.join("; ") : "its status names no leader" };
}

/**
 * Whether the cluster has quorum: false when a member that answers has no leader (etcd's leader
 * steps down without a quorum, and a member cut off from it drops it after the election timeout)
 * or when no member answers; undefined until every member was probed once (and nothing already
 * shows it lost). Silent members alone do not count against it: the endpoints given need not be
 * the cluster's members (one may be dead, or a proxy), etcd's own view of its leader is what counts.
 */
export function quorumOf(members: readonly MemberState[]): boolean | undefined {
  if (members.some((m) => m.answering === true && m.hasLeader === false)) return false;
  if (members.length > 0 && members.every((m) => m.answering === false)) return false;
  if (members.some((m) => m.answering === undefined)) return undefined;
  return true;
}

/**
 * The member to use next, given the one in use (`current`). Kept while it answers and knows a
 * leader (or has not been probed yet); left when it does not answer, or when it has had no leader
 * for `leaderlessLimitMs` while another has one (it is cut off from the cluster). Moves to the next
 * member (in order after it) that answers with a leader, else to one that answers; stays when no
 * other member answers.
 */
export function memberToUse(members: readonly MemberState[], current: number, nowMs: number, leaderlessLimitMs: number): number {
  const m = members[current];
  if (!m || m.answering === undefined) return current;
  const cutOff = m.answering && !m.hasLeader && m.leaderlessSinceMs !== undefined && nowMs - m.leaderlessSinceMs >= leaderlessLimitMs;
  if (m.answering && !cutOff) return current;
  const order = members.map((_, k) => (current + 1 + k) % members.length).filter((k) => k !== current);
  const withLeader = order.find((k) => members[k]!.answering === true && members[k]!.hasLeader === true);
  if (withLeader !== undefined) return withLeader;
  if (cutOff) return current; // no member knows a leader: moving gains nothing
  return order.find((k) => members[k]!.answering === true) ?? current;
}

/** Why discovery is degraded as far as the members tell (undefined when they do not). */
export function membersDegradedReason(members: readonly MemberState[], current: number): string | undefined {
  const reasons: string[] = [];
  const inUse = members[current];
  const silent = (m: MemberState) => `${m.endpoint}${m.lastError ? ` (${m.lastError})` : ""}`;
  if (inUse?.answering === false) reasons.push(`etcd member in use ${silent(inUse)} does not answer`);
  const others = members.filter((m, k) => k !== current && m.answering === false);
  if (others.length > 0) reasons.push(`etcd member${others.length > 1 ? "s" : ""} ${others.map(silent).join(", ")} ${others.length > 1 ? "do" : "does"} not answer`);
  if (quorumOf(members) === false) {
    const leaderless = members.filter((m) => m.answering === true && m.hasLeader === false).map((m) => m.endpoint);
    reasons.push(`etcd quorum lost: ${leaderless.length > 0 ? `${leaderless.join(", ")} ${leaderless.length > 1 ? "have" : "has"} no leader` : "no member answers"}`);
  }
  return reasons.length > 0 ? reasons.join("; ") : undefined;
}
