// Decode side of Dynamo's KV hand-over (protocol/dynamo/bootstrap.ts has the exchange): register for
// the request's room on the prefill worker's bootstrap port, accept and apply the prefill's actions,
// and wait for "Complete", when the prompt's KV may be loaded. Anything else (a message out of turn,
// a close, no "Complete" in time, no connection) is a reason, and the caller computes the prompt.
import { randomUUID } from "node:crypto";
import { encodeHandoffFrame, HandoffReader, messageName, type BootstrapInfo, type HandoffIdentity } from "../../../protocol/dynamo/bootstrap.ts";
import { connectTcp, type TcpConnection } from "../../../transport/tcp/tcp.ts";
import type { PullOutcome } from "./pull-client.ts";

/** Dynamo's mocker waits this long for its prefill. */
export const RENDEZVOUS_TIMEOUT_MS = 30_000;

export interface Meeting {
  info: BootstrapInfo;
  /** The frontend's request id: the hand-over's identity names it. */
  requestId: string;
  dpRank: number;
  /** Prompt tokens in the blocks this rank lacks (DestinationReserved's `transferable_prompt_tokens`). */
  transferableTokens: number;
}

const actionOf = (m: unknown): { id: unknown; kind: string } | undefined => {
  const a = typeof m === "object" && m !== null ? (m as { Action?: { id?: unknown; action?: unknown } }).Action : undefined;
  return a ? { id: a.id, kind: messageName(a.action) } : undefined;
};

export function meetPrefill(m: Meeting, timeoutMs = RENDEZVOUS_TIMEOUT_MS): Promise<PullOutcome> {
  const where = `room ${m.info.room} at ${m.info.host}:${m.info.port}`;
  const identity: HandoffIdentity = { handoff_id: m.info.handoffId ?? randomUUID(), bootstrap_room: m.info.room, request_id: m.requestId };
  const reader = new HandoffReader(false);
  return new Promise((resolve) => {
    let conn: TcpConnection | undefined;
    let settled = false;
    const done = (outcome: PullOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      conn?.end();
      resolve(outcome);
    };
    const timer = setTimeout(() => done({ ok: false, reason: `${where}: no hand-over within ${timeoutMs} ms` }), timeoutMs);
    const send = (message: unknown, hello = false) => conn!.write(encodeHandoffFrame({ identity, message }, hello));
    connectTcp(m.info.host, m.info.port, {
      opened: (c) => {
        conn = c;
        send({ Register: { role: "Destination", dp_rank: m.dpRank, order: "SourceFirst", engine_type: "vllm" } }, true);
      },
      data: (_c, chunk) => {
        const read = reader.push(chunk);
        if (!read.ok) return done({ ok: false, reason: `${where}: ${read.problem}` });
        for (const f of read.frames) {
          const name = messageName(f.message);
          const action = actionOf(f.message);
          if (name === "Registered" || name === "Fact") continue;
          if (action?.kind === "ReserveDestination") {
            send({ ActionAck: { action_id: action.id, outcome: "Accepted" } });
            send({ Fact: { DestinationReserved: { handoff_id: identity.handoff_id, transferable_prompt_tokens: m.transferableTokens } } });
          } else if (action?.kind === "ActivateDestination") send({ ActionAck: { action_id: action.id, outcome: "Applied" } });
          else if (name === "Complete") return done({ ok: true });
          else return done({ ok: false, reason: `${where}: unexpected hand-over message ${action ? `Action ${action.kind}` : name}` });
        }
      },
      close: () => done({ ok: false, reason: `${where}: the prefill worker closed the connection before the hand-over completed` }),
    }).catch((err: Error) => done({ ok: false, reason: `${where}: ${err.message}` }));
  });
}
