// Judging etcd members from their probes: a status read, quorum over the configured members, which
// member to use next, and the reason /health gives.
import { describe, expect, test } from "bun:test";
import { memberToUse, memberViews, membersDegradedReason, quorumOf, readStatus, type MemberState } from "./etcd-members.ts";

const A = "http://a:2379";
const B = "http://b:2379";
const C = "http://c:2379";
const ok = (endpoint: string): MemberState => ({ endpoint, answering: true, hasLeader: true, lastAnswerMs: 0 });
const silent = (endpoint: string): MemberState => ({ endpoint, answering: false, lastError: "no answer within 3000 ms" });
const leaderless = (endpoint: string, sinceMs = 0): MemberState => ({ endpoint, answering: true, hasLeader: false, leaderlessSinceMs: sinceMs, lastError: "etcdserver: no leader" });
const unprobed = (endpoint: string): MemberState => ({ endpoint });

describe("etcd member status", () => {
  test("a status names a leader, or says it has none (etcd leaves `leader` out)", () => {
    expect(readStatus({ leader: "16365955739886761472" })).toEqual({ hasLeader: true });
    expect(readStatus({ errors: ["etcdserver: no leader"] })).toEqual({ hasLeader: false, problem: "etcdserver: no leader" });
    expect(readStatus({ leader: "0" })).toEqual({ hasLeader: false, problem: "its status names no leader" });
    expect(readStatus({ leader: "7", errors: ["NOSPACE"] })).toEqual({ hasLeader: true, problem: "NOSPACE" });
  });
});

describe("etcd quorum", () => {
  test("every member answering with a leader: quorum", () => {
    expect(quorumOf([ok(A), ok(B), ok(C)])).toBe(true);
  });

  test("one of three silent: still a majority", () => {
    expect(quorumOf([silent(A), ok(B), ok(C)])).toBe(true);
  });

  test("an answering member without a leader (two of three hung: the last one's leader is gone), or no member answering: lost", () => {
    expect(quorumOf([silent(A), silent(B), leaderless(C)])).toBe(false);
    expect(quorumOf([ok(A), leaderless(B), ok(C)])).toBe(false);
    expect(quorumOf([silent(A), silent(B), silent(C)])).toBe(false);
    expect(quorumOf([silent(A)])).toBe(false);
  });

  test("silent endpoints alone do not count against it: a dead endpoint beside a one-member etcd", () => {
    expect(quorumOf([silent(A), ok(B)])).toBe(true);
    expect(quorumOf([ok(A)])).toBe(true);
  });

  test("unknown until every member was probed, unless already lost", () => {
    expect(quorumOf([ok(A), unprobed(B), ok(C)])).toBeUndefined();
    expect(quorumOf([silent(A), unprobed(B), silent(C)])).toBeUndefined();
    expect(quorumOf([leaderless(A), unprobed(B), silent(C)])).toBe(false);
  });
});

describe("the member to use", () => {
  test("kept while it answers with a leader, or before its first probe", () => {
    expect(memberToUse([ok(A), ok(B), ok(C)], 0, 10_000, 3000)).toBe(0);
    expect(memberToUse([unprobed(A), ok(B), ok(C)], 0, 10_000, 3000)).toBe(0);
  });

  test("a silent member is left for the next one (in order after it) that answers with a leader", () => {
    expect(memberToUse([silent(A), ok(B), ok(C)], 0, 0, 3000)).toBe(1);
    expect(memberToUse([ok(A), silent(B), ok(C)], 1, 0, 3000)).toBe(2);
    expect(memberToUse([ok(A), ok(B), silent(C)], 2, 0, 3000)).toBe(0);
    expect(memberToUse([silent(A), leaderless(B), ok(C)], 0, 0, 3000)).toBe(2);
  });

  test("with no member knowing a leader, one that answers beats a silent one; none answering: stay", () => {
    expect(memberToUse([silent(A), silent(B), leaderless(C)], 0, 0, 3000)).toBe(2);
    expect(memberToUse([silent(A), silent(B), silent(C)], 1, 0, 3000)).toBe(1);
  });

  test("a member cut off from the leader is left once that lasted the limit, for one with a leader", () => {
    const members = [leaderless(A, 1000), ok(B), ok(C)];
    expect(memberToUse(members, 0, 3999, 3000)).toBe(0);
    expect(memberToUse(members, 0, 4000, 3000)).toBe(1);
    // No one has a leader (an election, or quorum lost): moving gains nothing.
    expect(memberToUse([leaderless(A, 0), leaderless(B, 0), silent(C)], 0, 60_000, 3000)).toBe(0);
  });
});

describe("what /health says of the members", () => {
  test("nothing while every member answers with a leader", () => {
    expect(membersDegradedReason([ok(A), ok(B), ok(C)], 0)).toBeUndefined();
    expect(memberViews([ok(A), unprobed(B)])).toEqual([{ endpoint: A, answering: true, leader: true }, { endpoint: B, answering: null }]);
  });

  test("a silent member is named, the one in use first", () => {
    expect(membersDegradedReason([silent(A), ok(B), ok(C)], 1)).toBe(`etcd member ${A} (no answer within 3000 ms) does not answer`);
    expect(membersDegradedReason([silent(A), ok(B), ok(C)], 0)).toBe(`etcd member in use ${A} (no answer within 3000 ms) does not answer`);
    expect(memberViews([silent(A)])).toEqual([{ endpoint: A, answering: false, lastError: "no answer within 3000 ms" }]);
  });

  test("a lost quorum is said, with why", () => {
    expect(membersDegradedReason([silent(A), silent(B), leaderless(C)], 2)).toBe(
      `etcd members ${A} (no answer within 3000 ms), ${B} (no answer within 3000 ms) do not answer; etcd quorum lost: ${C} has no leader`,
    );
    expect(membersDegradedReason([silent(A), silent(B)], 0)).toBe(
      `etcd member in use ${A} (no answer within 3000 ms) does not answer; etcd member ${B} (no answer within 3000 ms) does not answer; etcd quorum lost: no member answers`,
    );
    expect(memberViews([leaderless(C)])).toEqual([{ endpoint: C, answering: true, leader: false, lastError: "etcdserver: no leader" }]);
  });
});
