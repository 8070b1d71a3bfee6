"""The host-tier half of the capture (capture-dynamo.py runs it): Dynamo's own mocker with a small
device cache and a host tier (`--num-host-blocks`), six distinct chat requests through Dynamo's
frontend, and every kv-events message its worker publishes, into kv-events-host.json."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import zmq

from capture_wire import decode_event_message, free_port, http, peer_env, wait_for


def capture_host_tier(out, model_dir, stop_processes):
    tmp = tempfile.mkdtemp(prefix="kvcr-capture-")
    procs = []
    zctx = zmq.Context()
    try:
        kv = os.path.join(tmp, "kv")
        env = {**os.environ, **peer_env(), "DYN_FILE_KV": kv}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dynamo.mocker", "--model-path", model_dir, "--model-name", "mock-model", "--block-size", "16",
             "--speedup-ratio", "0", "--num-gpu-blocks-override", "40", "--num-host-blocks", "200",
             "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"],
            env=env, stdout=open(os.path.join(tmp, "mocker.log"), "w"), stderr=subprocess.STDOUT))

        def kv_channel():
            d = os.path.join(kv, "v1", "event_channels")
            for name in os.listdir(d) if os.path.isdir(d) else []:
                text = open(os.path.join(d, name)).read() if "kv%2Devents" in name else ""
                if text:
                    return json.loads(text)
            return None

        channel = wait_for("the mocker's kv-events channel", kv_channel)
        sub = zctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(channel["transport"]["config"]["endpoint"])
        port = free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", str(port),
             "--router-mode", "kv", "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"],
            env=env, stdout=open(os.path.join(tmp, "frontend.log"), "w"), stderr=subprocess.STDOUT))
        base = f"http://127.0.0.1:{port}"

        def listed():
            try:
                return '"mock-model"' in http(f"{base}/v1/models")
            except OSError:
                return False

        wait_for("the frontend to list mock-model", listed)
        time.sleep(1.5)  # the SUB joins late (ZeroMQ slow joiner)
        for i in range(6):
            http(f"{base}/v1/chat/completions", {"model": "mock-model", "messages": [{"role": "user", "content": f"{i} " + "long prompt text " * 20}], "max_tokens": 2})
        events = []
        while sub.poll(500):
            events.append(decode_event_message(sub.recv_multipart()))
        json.dump({"channel": channel, "messages": events}, open(os.path.join(out, "kv-events-host.json"), "w"), indent=1)
    finally:
        stop_processes(procs)
        zctx.destroy(linger=0)
        shutil.rmtree(tmp, ignore_errors=True)
