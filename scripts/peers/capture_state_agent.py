"""The state-agent half of the capture (capture-dynamo.py runs it): Dynamo's own
`python -m dynamo.kv_state_agent` and an attachment made by Dynamo's own Python API
(`KvStateAttachmentOwner`, as Dynamo's vLLM worker uses it) for a raw vLLM-format stream that this
script publishes with pyzmq. Records the host advertisement, the intent, the agent's source and
attachment records, the router events it republishes and its /metrics names."""
import asyncio
import json
import os
import struct
import subprocess
import sys
import time
import urllib.request

import msgspec
import zmq

OWNER_SCRIPT = r'''
import asyncio, json, sys, uvloop
from dynamo.llm import KvStateAttachmentOwner
from dynamo.runtime import DistributedRuntime, dynamo_worker
raw, owner_id = sys.argv[1], sys.argv[2]
@dynamo_worker()
async def worker(runtime: DistributedRuntime):
    ep = runtime.endpoint("dynamo.backend.generate")
    async def serve(_req):
        yield {"token_ids": [1], "finish_reason": "length"}
    serving = asyncio.ensure_future(ep.serve_endpoint(serve))
    owner = KvStateAttachmentOwner(ep, ep.connection_id(), [{
        "cache_owner_id": owner_id, "global_dp_rank": 0, "kv_state_endpoint": "dynamo/backend/generate",
        "indexer_domain_id": owner_id.split("/", 1)[0], "kv_block_size": 16, "raw_zmq_endpoint": raw,
        "raw_topic": "", "image_token_id": None, "video_token_id": None, "router_hint_source": None}])
    await owner.start()
    print("attached", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await owner.close()
    serving.cancel()
uvloop.run(worker())
'''

CACHE_OWNER = ("0123456789abcdef0123456789abcdef:00112233445566778899aabbccddeeff/"
               "0011223344556677/00000000000000000000000000000001")


def stop_processes(procs):
    """SIGTERM each process still running, then SIGKILL what has not exited within 10 s."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def free_i16_port():
    """A free port below 32768: Dynamo 1.6.1 reads DYN_SYSTEM_PORT as an i16 and refuses a higher one."""
    import random
    import socket

    for _ in range(100):
        port = random.randint(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise SystemExit("capture: no free port below 32768 for DYN_SYSTEM_PORT")


def records(root):
    out = {}
    for bucket in ("instances", "mdc", "event_channels", "event_sources"):
        d = os.path.join(root, "v1", bucket)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if not name.startswith(".tmp_"):
                text = open(os.path.join(d, name)).read()
                if text:
                    out.setdefault(bucket, []).append({"file": name, "value": json.loads(text)})
    return out


def topic_records(root, topic):
    return [r["value"] for r in records(root).get("event_sources", []) if r["value"]["topic"] == topic]


def capture_state_agent(out, env, free_port, wait_for):
    kv = env["DYN_FILE_KV"]
    procs = []
    zctx = zmq.Context()
    try:
        system_port = free_i16_port()
        procs.append(subprocess.Popen([sys.executable, "-m", "dynamo.kv_state_agent", "--max-slots", "2"],
                                      env={**env, "DYN_SYSTEM_PORT": str(system_port)},
                                      stdout=open(os.path.join(os.path.dirname(kv), "agent.log"), "w"), stderr=subprocess.STDOUT))
        wait_for("the state agent's host advertisement", lambda: topic_records(kv, "kv-state-hosts-v2") or (procs[0].poll() is not None and sys.exit("capture: the state agent exited: " + open(os.path.join(os.path.dirname(kv), "agent.log")).read()[-2000:])))

        raw_port = free_port()
        pub = zctx.socket(zmq.PUB)
        pub.bind(f"tcp://127.0.0.1:{raw_port}")
        owner = subprocess.Popen([sys.executable, "-c", OWNER_SCRIPT, f"tcp://127.0.0.1:{raw_port}", CACHE_OWNER],
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append(owner)
        wait_for("the agent's attachment record", lambda: topic_records(kv, "kv-state-attachments-v2"))

        channel = next(r["value"] for r in records(kv).get("event_channels", []) if r["value"]["topic"] == "kv-state-events-v2")
        sub = zctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(channel["transport"]["config"]["endpoint"])
        time.sleep(1.0)  # the SUB and the agent's SUB on the raw stream both join late (ZeroMQ slow joiner)
        # vLLM's raw batch: [topic, seq u64 BE, msgpack (ts, [events], dp_rank)], BlockStored as an array.
        tokens = list(range(1, 33))
        batch = [time.time(), [["BlockStored", [111, 222], None, tokens, 16, None, "GPU", None]], 0]
        raw_frames = [b"", struct.pack(">Q", 0), msgspec.msgpack.encode(batch)]
        pub.send_multipart(raw_frames)
        republished = []
        deadline = time.time() + 10
        while time.time() < deadline and not republished:
            if sub.poll(200):
                frames = sub.recv_multipart()
                version, length = struct.unpack_from(">BI", frames[3], 0)
                envelope = msgspec.msgpack.decode(frames[3][5:5 + length])
                payload = envelope.pop("payload")
                republished.append({"frames_hex": [f.hex() for f in frames], "envelope": envelope,
                                    "payload": json.loads(json.dumps(msgspec.msgpack.decode(payload)))})
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{system_port}/metrics", timeout=10).read().decode()
        names = sorted({l.split("{")[0].split(" ")[0] for l in metrics.splitlines() if l and not l.startswith("#")})
        json.dump({"cache_owner_id": CACHE_OWNER, "raw_frames_hex": [f.hex() for f in raw_frames],
                   "records": records(kv), "republished": republished},
                  open(os.path.join(out, "state-agent.json"), "w"), indent=1)
        open(os.path.join(out, "state-agent-metrics.txt"), "w").write("\n".join(names) + "\n")
        owner.stdin.close()
        owner.wait(10)
    finally:
        stop_processes(procs)
        zctx.destroy(linger=0)
