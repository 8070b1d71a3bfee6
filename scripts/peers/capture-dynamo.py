"""Captures what Dynamo's own frontend and mocker put on disk and on the wire, as small fixtures.

Run with the peers environment's Python (`bun scripts/peers-env.ts` prints it):

    PY=$(bun scripts/peers-env.ts) && $PY scripts/peers/capture-dynamo.py OUT_DIR [--model-dir DIR]

It starts `python -m dynamo.mocker` (one worker, file discovery, TCP request plane, ZeroMQ event
plane) writing discovery records to one directory, mirrors them into a second directory with the
worker's address replaced by a recording proxy, and starts `python -m dynamo.frontend` on the
second. The proxy records the request plane (frontend -> worker) and, by pointing the call-home
address in each request at a second proxy, the response plane (worker -> frontend). A ZeroMQ SUB
records the worker's `kv-events` frames. Then one chat request is sent twice (the second a prefix
hit), and everything lands in OUT_DIR:

    versions.json, discovery.json, request-plane.json, response-plane.json, kv-events.json,
    chat.json, frontend-metrics.txt, help/<command>.flags (and the full text of Dynamo's two),
    state-agent.json and state-agent-metrics.txt (capture_state_agent.py),
    disagg-bootstrap.json and disagg-no-bootstrap.json (capture_disagg.py), lora.json (capture_lora.py),
    kv-events-host.json (capture_host_tier.py)

Every process and socket is on 127.0.0.1 and is stopped at the end, also on failure.
"""
import argparse
import asyncio
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import zmq

from capture_disagg import capture_disagg
from capture_host_tier import capture_host_tier
from capture_lora import capture_lora
from capture_state_agent import capture_state_agent, stop_processes
from capture_wire import Recorder, decode_event_message, dump_discovery, free_port, http, mirror, peer_env, wait_for

HELP_COMMANDS = {
    "dynamo.frontend": [sys.executable, "-m", "dynamo.frontend", "--help"],
    "dynamo.mocker": [sys.executable, "-m", "dynamo.mocker", "--help"],
    "sglang-router": [sys.executable, "-m", "sglang_router.launch_router", "--help"],
    "vllm-router": [sys.executable, "-m", "vllm_router.launch_router", "--help"],
    "aiperf-profile": [os.path.join(os.path.dirname(sys.executable), "aiperf"), "profile", "--help"],
}
PEERS = ["ai-dynamo", "ai-dynamo-runtime", "sglang-router", "vllm-router", "aiperf", "aiconfigurator"]


async def capture(out, model_dir):
    tmp = tempfile.mkdtemp(prefix="kvcr-capture-")
    procs = []
    zctx = zmq.Context()
    try:
        worker_kv, frontend_kv = os.path.join(tmp, "worker-kv"), os.path.join(tmp, "frontend-kv")
        base_env = {**os.environ, **peer_env()}
        mocker_log = open(os.path.join(tmp, "mocker.log"), "w")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dynamo.mocker", "--model-path", model_dir, "--model-name", "mock-model",
             "--num-workers", "1", "--block-size", "16", "--speedup-ratio", "0",
             "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"],
            env={**base_env, "DYN_FILE_KV": worker_kv}, stdout=mocker_log, stderr=subprocess.STDOUT))

        def instance():
            d = os.path.join(worker_kv, "v1", "instances")
            for name in os.listdir(d) if os.path.isdir(d) else []:
                v = json.loads(open(os.path.join(d, name)).read() or "null") if not name.startswith(".tmp_") else None
                if v and v["endpoint"] == "generate":
                    return v
            return None

        inst = wait_for("the mocker's endpoint record", instance)
        worker_addr = inst["transport"]["tcp"].split("/", 1)[0]
        wait_for("the mocker's kv-events source", lambda: os.path.isdir(os.path.join(worker_kv, "v1", "event_sources"))
                 and os.listdir(os.path.join(worker_kv, "v1", "event_sources")))

        rec = Recorder(free_port())
        req_server = await rec.request_proxy(worker_addr)
        resp_server = await rec.response_proxy()
        proxy_addr = f"127.0.0.1:{req_server.sockets[0].getsockname()[1]}"

        def rewrite(bucket, text):
            return text.replace(worker_addr, proxy_addr) if bucket in ("instances", "event_sources") else text

        mirror(worker_kv, frontend_kv, rewrite)

        async def keep_mirroring():
            while True:
                mirror(worker_kv, frontend_kv, rewrite)
                await asyncio.sleep(1)

        mirroring = asyncio.get_running_loop().create_task(keep_mirroring())

        # The worker's kv-events PUB, from its event channel record.
        channels = os.path.join(worker_kv, "v1", "event_channels")
        kv_channel = next(json.loads(open(os.path.join(channels, n)).read()) for n in os.listdir(channels) if "kv%2Devents" in n)
        sub = zctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(kv_channel["transport"]["config"]["endpoint"])

        port = free_port()
        fe_log = open(os.path.join(tmp, "frontend.log"), "w")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", str(port),
             "--router-mode", "kv", "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"],
            env={**base_env, "DYN_FILE_KV": frontend_kv}, stdout=fe_log, stderr=subprocess.STDOUT))
        base = f"http://127.0.0.1:{port}"

        def model_listed():
            try:
                return '"mock-model"' in http(f"{base}/v1/models")
            except OSError:
                return False

        await asyncio.get_running_loop().run_in_executor(None, wait_for, "the frontend to list mock-model", model_listed)
        await asyncio.sleep(1.5)  # the router's KV-event subscription joins after the model is listed
        prompt = "The quick brown fox jumps over the lazy dog. " * 3
        responses = []
        for _ in range(2):
            body = {"model": "mock-model", "messages": [{"role": "user", "content": prompt}], "max_tokens": 3,
                    "stream": True, "stream_options": {"include_usage": True}}
            text = await asyncio.get_running_loop().run_in_executor(None, http, f"{base}/v1/chat/completions", body)
            responses.append(text)
            await asyncio.sleep(0.5)
        metrics = await asyncio.get_running_loop().run_in_executor(None, http, f"{base}/metrics")

        events = []
        while sub.poll(200):
            events.append(decode_event_message(sub.recv_multipart()))
        mirroring.cancel()

        os.makedirs(os.path.join(out, "help"), exist_ok=True)
        dump_discovery(worker_kv, os.path.join(out, "discovery.json"))
        json.dump(rec.request_plane, open(os.path.join(out, "request-plane.json"), "w"), indent=1)
        json.dump(rec.response_plane, open(os.path.join(out, "response-plane.json"), "w"), indent=1)
        json.dump({"channel": kv_channel, "messages": events}, open(os.path.join(out, "kv-events.json"), "w"), indent=1)
        json.dump({"prompt": prompt, "sse": responses}, open(os.path.join(out, "chat.json"), "w"), indent=1)
        names = sorted({line.split("{")[0].split(" ")[0] for line in metrics.splitlines() if line and not line.startswith("#")})
        open(os.path.join(out, "frontend-metrics.txt"), "w").write("\n".join(names) + "\n")
        req_server.close()
        resp_server.close()
    finally:
        stop_processes(procs)
        zctx.destroy(linger=0)
        shutil.rmtree(tmp, ignore_errors=True)


FULL_HELP = {"dynamo.frontend", "dynamo.mocker"}


def help_flags(text):
    """The long flags a --help lists (first spelling of each option line), sorted."""
    return sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text)))


def capture_help(out):
    os.makedirs(os.path.join(out, "help"), exist_ok=True)
    for name, argv in HELP_COMMANDS.items():
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"})
        if r.returncode != 0:
            raise SystemExit(f"capture: `{' '.join(argv[1:])}` failed ({r.returncode}): {r.stderr[-400:]}")
        if name in FULL_HELP:
            open(os.path.join(out, "help", f"{name}.txt"), "w").write(r.stdout)
        open(os.path.join(out, "help", f"{name}.flags"), "w").write("\n".join(help_flags(r.stdout)) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--model-dir", required=True, help="a model directory (`kvcr-mock model-files --out DIR` writes one)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    versions = {name: md.version(name) for name in PEERS}
    json.dump({"python": sys.version.split()[0], **versions}, open(os.path.join(args.out, "versions.json"), "w"), indent=1)
    capture_help(args.out)
    asyncio.run(capture(args.out, os.path.abspath(args.model_dir)))
    for bootstrap in (True, False):
        asyncio.run(capture_disagg(args.out, os.path.abspath(args.model_dir), stop_processes, bootstrap))
    capture_lora(args.out, os.path.abspath(args.model_dir), stop_processes)
    capture_host_tier(args.out, os.path.abspath(args.model_dir), stop_processes)
    with tempfile.TemporaryDirectory(prefix="kvcr-capture-") as tmp:
        capture_state_agent(args.out, {**os.environ, **peer_env(), "DYN_FILE_KV": os.path.join(tmp, "kv")}, free_port, wait_for)
    print(f"captured into {args.out}")


if __name__ == "__main__":
    main()
