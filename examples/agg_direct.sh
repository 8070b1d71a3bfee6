#!/usr/bin/env bash
# A direct-mode stack (no state agent): each mocker relays its workers' KV events to the
# frontend's KV router itself, as Dynamo's mocker does without a state agent. 1 mocker process ×
# 4 workers, G1 only, frontend with the KV router.
#
#   examples/agg_direct.sh [-- CMD …]
#
# Overridable: HTTP_PORT (frontend, default 8000), KVCR_MOCK (how to run kvcr-mock). Extra
# arguments go to `kvcr-mock up`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
KVCR_MOCK=${KVCR_MOCK:-"$repo/node_modules/.bin/bun $repo/src/cli.ts"}
HTTP_PORT=${HTTP_PORT:-8000}

# shellcheck disable=SC2086 # KVCR_MOCK may be a command with arguments
exec $KVCR_MOCK up \
  --no-kv-state-agent \
  --num-host-blocks 0 \
  --model-name mock-model \
  --block-size 64 \
  --num-gpu-blocks-override 1024 \
  --mocker-processes 1 \
  --workers-per-process 4 \
  --router-mode kv \
  --http-port "$HTTP_PORT" \
  "$@"
