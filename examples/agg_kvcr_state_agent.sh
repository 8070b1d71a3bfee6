#!/usr/bin/env bash
# An aggregated KVCR stack with the KV state agent, in the shape of the reference launch script:
# 1 state agent, 1 mocker process × 2 workers (block size 64, 96 GPU blocks and 4,096 host
# blocks per worker, G2 stores attached to the agent as CacheOwners), 1 frontend with the KV router.
#
#   examples/agg_kvcr_state_agent.sh                       # run until Ctrl-C
#   examples/agg_kvcr_state_agent.sh -- kvcr-mock bench …  # run a command against it, then stop
#
# Overridable: RAW_HOST (the host the agent dials for raw events), CACHE_SLOT (first CacheOwner
# slot), HTTP_PORT (frontend, default 8000), KVCR_MOCK (how to run kvcr-mock). Extra arguments go
# to `kvcr-mock up`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
KVCR_MOCK=${KVCR_MOCK:-"$repo/node_modules/.bin/bun $repo/src/cli.ts"}
RAW_HOST=${RAW_HOST:-127.0.0.1}
CACHE_SLOT=${CACHE_SLOT:-0}
HTTP_PORT=${HTTP_PORT:-8000}

# shellcheck disable=SC2086 # KVCR_MOCK may be a command with arguments
exec $KVCR_MOCK up \
  --kv-state-agent \
  --kv-state-agent-raw-host "$RAW_HOST" \
  --cache-slot-base "$CACHE_SLOT" \
  --model-name mock-model \
  --block-size 64 \
  --num-gpu-blocks-override 96 \
  --num-host-blocks 4096 \
  --mocker-processes 1 \
  --workers-per-process 2 \
  --router-mode kv \
  --http-port "$HTTP_PORT" \
  "$@"
