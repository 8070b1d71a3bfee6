// Router replica sync options (Dynamo's --router-replica-sync; NATS_SERVER as Dynamo reads it):
// frontend replicas share their active requests over NATS so that they route as one.
import { group } from "./options.ts";

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

export const replicaSyncOptions = group("Router replica sync", {
  routerReplicaSync: {
    kind: "bool",
    default: false,
    description: "Share this frontend's active requests with the other frontend replicas of the namespace over NATS (--nats-url), and count theirs in its load, so replicas route as one",
  },
  natsUrl: { kind: "string", nonEmpty: true, env: "NATS_SERVER", description: `NATS server(s) for --router-replica-sync, nats://HOST:PORT[,…] (default ${DEFAULT_NATS_URL})` },
  routerReplicaTimeout: {
    kind: "number",
    min: 0.1,
    max: 3600,
    default: 10,
    description: "Seconds another replica may stay silent (replicas send a heartbeat at least every second) before its requests are freed here",
  },
});

/** What is wrong with a --nats-url value, or undefined. */
export function natsUrlProblem(url: string): string | undefined {
  for (const part of url.split(",")) {
    let u: URL;
    try {
      u = new URL(part.trim());
    } catch {
      return `${JSON.stringify(part)} is not a URL (expected nats://HOST:PORT)`;
    }
    if (u.protocol !== "nats:") return `${JSON.stringify(part)}: expected the nats:// scheme`;
    if (u.hostname === "") return `${JSON.stringify(part)}: no host`;
  }
  return undefined;
}

export function replicaSyncProblems(c: { natsUrl?: string }): string[] {
  const why = c.natsUrl === undefined ? undefined : natsUrlProblem(c.natsUrl);
  return why === undefined ? [] : [`--nats-url (or NATS_SERVER): ${why}`];
}
