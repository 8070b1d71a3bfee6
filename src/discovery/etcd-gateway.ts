// The shapes of etcd's JSON gateway (grpc-gateway over etcd v3's API) that the client, the epoch,
// the watch and the records read and write: no code, so any of them may import it.

/** etcd's int64 fields travel as decimal strings in the gateway's JSON; kept as strings/bigint. */
export interface EtcdHeader {
  cluster_id?: string;
  revision?: string;
}

export interface EtcdKv {
  key: string; // base64
  value?: string; // base64
  create_revision?: string;
  mod_revision?: string;
  version?: string;
  lease?: string;
}

export interface EtcdWatchEvent {
  type?: "PUT" | "DELETE"; // PUT is the proto default, so the gateway omits it
  kv: EtcdKv;
  prev_kv?: EtcdKv;
}

export interface EtcdWatchResult {
  header?: EtcdHeader;
  created?: boolean;
  canceled?: boolean;
  compact_revision?: string;
  cancel_reason?: string;
  events?: EtcdWatchEvent[];
}

export type TxnOp =
  | { request_put: { key: string; value: string; lease?: string } }
  | { request_delete_range: { key: string } };

export interface TxnCompare {
  key: string;
  target: "MOD" | "CREATE";
  mod_revision?: string;
  create_revision?: string;
  result: "EQUAL";
}
