#!/usr/bin/env bash
# A KVCR stack across three "nodes" on one machine, all on one etcd (docs/up.md, Several hosts). The
# nodes are loopback addresses, so traffic stays on this machine:
#   node A 127.0.0.2: up --roles agent,frontend,mockers   (CacheOwner ordinals 0 …)
#   node B 127.0.0.3: up --roles mockers                   (next slot range)
#   node C 127.0.0.4: up --roles mockers                   (next slot range)
# each with PROCESSES mocker processes × WORKERS workers, its own --host and
# --kv-state-agent-raw-host, and a disjoint --cache-slot-base. On real hosts, run the same three
# `up` lines on three machines with their own addresses and a shared ETCD_ENDPOINTS.
#
#   examples/multi-node.sh                  # run until Ctrl-C
#   examples/multi-node.sh -- CMD …         # run CMD once every node is ready (KVCR_FRONTEND_URL,
#                                           # KVCR_AGENT_URL set), then stop, exiting with CMD's code
#
# Overridable: ETCD_ENDPOINTS (use a running etcd; otherwise one is started here on ETCD_PORT /
# ETCD_PEER_PORT, default 2379 / 2380, data in a temp dir), PROCESSES (2), WORKERS (2), HTTP_PORT
# (frontend, 8000), NAMESPACE (multi-node), KVCR_MOCK (how to run kvcr-mock).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
KVCR_MOCK=${KVCR_MOCK:-"$repo/node_modules/.bin/bun $repo/src/cli.ts"}
PROCESSES=${PROCESSES:-2}
WORKERS=${WORKERS:-2}
HTTP_PORT=${HTTP_PORT:-8000}
NAMESPACE=${NAMESPACE:-multi-node}
cmd=()
if [ "${1:-}" = "--" ]; then shift; cmd=("$@"); fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kvcr-multi-node.XXXXXX")
pids=()
stop() {
  trap - EXIT INT TERM
  [ ${#pids[@]} -gt 0 ] && kill -TERM "${pids[@]}" 2> /dev/null || true
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

# Waits up to 60 s for a condition (a command), naming what it waited for on failure.
wait_for() {
  local what=$1; shift
  for _ in $(seq 1 600); do "$@" > /dev/null 2>&1 && return 0; sleep 0.1; done
  echo "multi-node: gave up waiting for $what" >&2
  exit 1
}

if [ -z "${ETCD_ENDPOINTS:-}" ]; then
  command -v etcd > /dev/null || { echo "multi-node: etcd not found; apt-get install -y etcd-server, or set ETCD_ENDPOINTS" >&2; exit 1; }
  client="http://127.0.0.1:${ETCD_PORT:-2379}"
  peer="http://127.0.0.1:${ETCD_PEER_PORT:-2380}"
  etcd --name kvcr-multi-node --data-dir "$work/etcd" --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "kvcr-multi-node=$peer" \
    --log-level warn > "$work/etcd.log" 2>&1 &
  pids+=($!)
  ETCD_ENDPOINTS=$client
  wait_for "etcd at $client" curl -sf "$client/health"
fi
export ETCD_ENDPOINTS

per_node=$((PROCESSES * WORKERS))
common=(--discovery-backend etcd --namespace "$NAMESPACE" --mocker-processes "$PROCESSES" --workers-per-process "$WORKERS")

# node NAME HOST SLOT_BASE ROLE_ARGS…: one `up`, its output prefixed with the node's name.
node() {
  local name=$1 host=$2 base=$3; shift 3
  # shellcheck disable=SC2086 # KVCR_MOCK may be a command with arguments
  $KVCR_MOCK up "$@" --host "$host" --kv-state-agent-raw-host "$host" --cache-slot-base "$base" \
    --state-file "$work/$name.json" "${common[@]}" > >(sed -u "s/^/[node $name] /") 2>&1 &
  pids+=($!)
}

node A 127.0.0.2 0 --roles agent,frontend,mockers --max-slots $((3 * per_node)) --http-port "$HTTP_PORT"
wait_for "node A" test -s "$work/A.json"
node B 127.0.0.3 "$per_node" --roles mockers
node C 127.0.0.4 $((2 * per_node)) --roles mockers
wait_for "nodes B and C" test -s "$work/B.json" -a -s "$work/C.json"

json() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" "$work/A.json" | head -1; }
export KVCR_FRONTEND_URL KVCR_AGENT_URL
KVCR_FRONTEND_URL=$(json frontend_url)
KVCR_AGENT_URL=$(json agent_url)
wait_for "the frontend to route over all $((3 * per_node)) workers" sh -c "curl -sf '$KVCR_FRONTEND_URL/health' | grep -q '\"instances\":$((3 * per_node))[,}]'"
wait_for "the agent to attach all $((3 * per_node)) slots" sh -c "[ \$(curl -sf '$KVCR_AGENT_URL/v1/slots' | grep -o '\"state\":\"active\"' | wc -l) -eq $((3 * per_node)) ]"
echo "multi-node: 3 nodes × $per_node workers on etcd $ETCD_ENDPOINTS; frontend $KVCR_FRONTEND_URL, agent $KVCR_AGENT_URL"

if [ ${#cmd[@]} -gt 0 ]; then
  set +e
  "${cmd[@]}"
  code=$?
  set -e
  exit "$code"
fi
wait -n "${pids[@]}" # any node (or etcd) exiting stops the rest
