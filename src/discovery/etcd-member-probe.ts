// Asks every `--etcd-endpoints` member for its status (`/v3/maintenance/status`, answered locally,
// no raft round) every second, each with a deadline: a member that is stopped or hung keeps its
// TCP connections open and never closes a watch, and the gateway's watch cannot ask for progress
// notifications, so only a probe with a deadline notices it. Transitions are logged at WARN.
import type { DiscoveryLogger } from "./store.ts";
import { readStatus, type MemberState, type StatusReply } from "./etcd-members.ts";

export interface MemberProbeOptions {
  endpoints: readonly string[];
  /** Between probes of one member (a probe still waiting is not doubled). */
  intervalMs: number;
  /** A member that has not answered a probe within this is taken as not answering. */
  timeoutMs: number;
  logger: DiscoveryLogger;
  /** After every probe settles: the store reviews which member to use. */
  onSettled(): void;
  /** A member that did not answer answers again. */
  onResumed?(member: MemberState): void;
}

export class EtcdMemberProbe {
  readonly members: MemberState[];
  private readonly waiting = new Set<number>();
  private readonly abort = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(private readonly opts: MemberProbeOptions) {
    this.members = opts.endpoints.map((endpoint) => ({ endpoint }));
  }

  start(): void {
    if (this.closed || this.timer !== undefined) return;
    this.round();
  }

  private round(): void {
    if (this.closed) return;
    for (let i = 0; i < this.members.length; i++) if (!this.waiting.has(i)) void this.probe(i);
    this.timer = setTimeout(() => this.round(), this.opts.intervalMs);
  }

  private async probe(i: number): Promise<void> {
    const m = this.members[i]!;
    this.waiting.add(i);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.opts.timeoutMs);
    try {
      const res = await fetch(`${m.endpoint}/v3/maintenance/status`, { method: "POST", body: "{}", headers: { "content-type": "application/json" }, signal: AbortSignal.any([this.abort.signal, deadline.signal]) });
      const text = await res.text();
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${text.slice(0, 200)}`);
      let reply: StatusReply;
      try {
        reply = JSON.parse(text) as StatusReply;
      } catch {
        throw new Error(`status reply is not JSON: ${text.slice(0, 200)}`);
      }
      if (this.closed) return;
      this.answered(m, readStatus(reply));
    } catch (err) {
      if (this.closed) return;
      this.silent(m, deadline.signal.aborted ? `no answer within ${this.opts.timeoutMs} ms` : (err as Error).message);
    } finally {
      clearTimeout(timer);
      this.waiting.delete(i);
      if (!this.closed) this.opts.onSettled();
    }
  }

  private answered(m: MemberState, status: { hasLeader: boolean; problem?: string }): void {
    const now = Date.now();
    const resumed = m.answering === false;
    if (resumed) this.opts.logger.warn(`discovery: etcd member ${m.endpoint} answers again (silent for ${m.lastAnswerMs === undefined ? "?" : now - m.lastAnswerMs} ms)`);
    if (!status.hasLeader && m.hasLeader !== false) this.opts.logger.warn(`discovery: etcd member ${m.endpoint} has no leader (${status.problem})`);
    if (status.hasLeader && m.hasLeader === false) this.opts.logger.warn(`discovery: etcd member ${m.endpoint} has a leader again`);
    if (!status.hasLeader) m.leaderlessSinceMs ??= now;
    else m.leaderlessSinceMs = undefined;
    m.answering = true;
    m.hasLeader = status.hasLeader;
    m.lastAnswerMs = now;
    m.lastError = status.problem;
    if (resumed) this.opts.onResumed?.(m);
  }

  private silent(m: MemberState, why: string): void {
    if (m.answering !== false) {
      const since = m.lastAnswerMs === undefined ? "" : `; last answer ${Date.now() - m.lastAnswerMs} ms ago`;
      this.opts.logger.warn(`discovery: etcd member ${m.endpoint} does not answer (${why}${since})`);
    }
    m.answering = false;
    m.hasLeader = undefined;
    m.leaderlessSinceMs = undefined;
    m.lastError = why;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    this.abort.abort();
  }
}
