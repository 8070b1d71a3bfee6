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
    state-agent.json and state-agent-metrics.txt (capture_state_agent.py)

Every process and socket is on 127.0.0.1 and is stopped at the end, also on failure.
"""
import argparse
import asyncio
import importlib.metadata as md
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import zmq

from capture_state_agent import capture_state_agent, stop_processes

HELP_COMMANDS = {
    "dynamo.frontend": [sys.executable, "-m", "dynamo.frontend", "--help"],
    "dynamo.mocker": [sys.executable, "-m", "dynamo.mocker", "--help"],
    "sglang-router": [sys.executable, "-m", "sglang_router.launch_router", "--help"],
    "vllm-router": [sys.executable, "-m", "vllm_router.launch_router", "--help"],
    "aiperf-profile": [os.path.join(os.path.dirname(sys.executable), "aiperf"), "profile", "--help"],
}
PEERS = ["ai-dynamo", "ai-dynamo-runtime", "sglang-router", "vllm-router", "aiperf", "aiconfigurator"]


def peer_env():
    """Offline, quiet, file discovery, TCP and ZeroMQ planes, every address on 127.0.0.1."""
    return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DYN_LOG": "warn", "DYN_DISCOVERY_BACKEND": "file",
            "DYN_REQUEST_PLANE": "tcp", "DYN_EVENT_PLANE": "zmq", "DYN_TCP_RPC_HOST": "127.0.0.1",
            "DYN_EVENT_PLANE_HOST": "127.0.0.1", "DYN_TCP_RESPONSE_STREAM_HOST": "127.0.0.1"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout_s=60.0):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"capture: timed out after {timeout_s:.0f} s waiting for {what}")


# --- the request and response planes -------------------------------------------------------------


def parse_request_frame(buf):
    """u16 path_len | path | u16 headers_len | headers | u32 payload_len | payload; None if short."""
    if len(buf) < 2:
        return None
    (plen,) = struct.unpack_from(">H", buf, 0)
    o = 2 + plen
    if len(buf) < o + 2:
        return None
    (hlen,) = struct.unpack_from(">H", buf, o)
    o2 = o + 2 + hlen
    if len(buf) < o2 + 4:
        return None
    (blen,) = struct.unpack_from(">I", buf, o2)
    end = o2 + 4 + blen
    if len(buf) < end:
        return None
    return buf[2 : 2 + plen], buf[o + 2 : o2], buf[o2 + 4 : end], end


def parse_two_part(buf):
    """u64 header_len | u64 body_len | u64 checksum | header | body; None if short."""
    if len(buf) < 24:
        return None
    hl, bl, ck = struct.unpack_from(">QQQ", buf, 0)
    end = 24 + hl + bl
    if len(buf) < end:
        return None
    return buf[24 : 24 + hl], buf[24 + hl : end], ck, end


def two_part(header, body, checksum=0):
    return struct.pack(">QQQ", len(header), len(body), checksum) + header + body


def decode_body(body, codec):
    if not body:
        return None
    if codec == "msgpack":
        import msgspec

        return {"msgpack": msgspec.msgpack.decode(body)}
    try:
        return {"json": json.loads(body)}
    except ValueError:
        return {"hex": body.hex()}


class Recorder:
    def __init__(self, response_proxy_port):
        self.request_plane = []
        self.response_plane = []
        self.response_proxy_port = response_proxy_port
        self.real_callhome = {}

    async def request_proxy(self, target):
        host, port = target.rsplit(":", 1)

        async def handle(cr, cw):
            sr, sw = await asyncio.open_connection(host, int(port))
            conn = len(self.request_plane)
            self.request_plane.append({"frames": [], "acks": []})

            async def c2s():
                buf = b""
                while True:
                    chunk = await cr.read(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while (f := parse_request_frame(buf)) is not None:
                        path, headers, payload, end = f
                        raw = buf[:end]
                        buf = buf[end:]
                        tp = parse_two_part(payload)
                        entry = {"raw_hex": raw.hex(), "path": path.decode(), "headers": json.loads(headers or b"{}")}
                        if tp is not None:
                            hdr, body, ck, _ = tp
                            control = json.loads(hdr)
                            entry["control"] = control
                            entry["checksum"] = ck
                            entry["body"] = decode_body(body, control.get("payload_codec", "json"))
                            info = json.loads(control["connection_info"]["info"])
                            self.real_callhome[info["subject"]] = (info["address"], control.get("payload_codec", "json"))
                            info["address"] = f"127.0.0.1:{self.response_proxy_port}"
                            control["connection_info"]["info"] = json.dumps(info)
                            payload = two_part(json.dumps(control).encode(), body, ck)
                            raw = struct.pack(">H", len(path)) + path + struct.pack(">H", len(headers)) + headers
                            raw += struct.pack(">I", len(payload)) + payload
                        self.request_plane[conn]["frames"].append(entry)
                        sw.write(raw)
                        await sw.drain()
                sw.close()

            async def s2c():
                while True:
                    chunk = await sr.read(65536)
                    if not chunk:
                        break
                    self.request_plane[conn]["acks"].append(chunk.hex())
                    cw.write(chunk)
                    await cw.drain()
                cw.close()

            try:
                await asyncio.gather(c2s(), s2c(), return_exceptions=True)
            except asyncio.CancelledError:
                pass

        return await asyncio.start_server(handle, "127.0.0.1", 0)

    async def response_proxy(self):
        async def handle(wr, ww):
            stream = {"worker_to_frontend": [], "frontend_to_worker": []}
            self.response_plane.append(stream)
            first = await wr.readexactly(24)
            hl, bl, _ = struct.unpack(">QQQ", first)
            rest = await wr.readexactly(hl + bl)
            handshake = json.loads(rest[:hl])
            target, codec = self.real_callhome[handshake["subject"]]
            host, port = target.rsplit(":", 1)
            fr, fw = await asyncio.open_connection(host, int(port))
            fw.write(first + rest)
            stream["worker_to_frontend"].append({"raw_hex": (first + rest).hex(), "header": handshake, "body": None})

            async def pump(r, w, key):
                buf = b""
                while True:
                    chunk = await r.read(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while (f := parse_two_part(buf)) is not None:
                        hdr, body, _, end = f
                        stream[key].append({"raw_hex": buf[:end].hex(), "header": json.loads(hdr) if hdr else None,
                                            "body": decode_body(body, codec)})
                        buf = buf[end:]
                    w.write(chunk)
                    await w.drain()
                w.close()

            try:
                await asyncio.gather(pump(wr, fw, "worker_to_frontend"), pump(fr, ww, "frontend_to_worker"), return_exceptions=True)
            except asyncio.CancelledError:
                pass

        return await asyncio.start_server(handle, "127.0.0.1", self.response_proxy_port)


def decode_event_message(frames):
    """[topic, publisher_id u64 BE, sequence u64 BE, u8 version | u32 BE length | msgpack envelope]."""
    import msgspec

    frame = frames[3]
    version, length = struct.unpack_from(">BI", frame, 0)
    envelope = msgspec.msgpack.decode(frame[5 : 5 + length])
    payload = envelope.pop("payload")
    return {"frames_hex": [f.hex() for f in frames], "frame_version": version, "envelope": envelope,
            "payload": json.loads(json.dumps(msgspec.msgpack.decode(payload)))}


# --- discovery mirror ----------------------------------------------------------------------------


def mirror(src, dst, rewrite):
    """Copies every record from src to dst (temp file + rename), rewriting instance transports."""
    for bucket in ("instances", "mdc", "event_channels", "event_sources"):
        sdir, ddir = os.path.join(src, "v1", bucket), os.path.join(dst, "v1", bucket)
        os.makedirs(ddir, exist_ok=True)
        names = set(os.listdir(sdir)) if os.path.isdir(sdir) else set()
        for name in names:
            if name.startswith(".tmp_"):
                continue
            try:
                text = open(os.path.join(sdir, name)).read()
            except FileNotFoundError:
                continue
            text = rewrite(bucket, text)
            target = os.path.join(ddir, name)
            if os.path.exists(target) and open(target).read() == text:
                os.utime(target)
                continue
            tmp = os.path.join(ddir, f".tmp_{os.getpid():016x}")
            with open(tmp, "w") as f:
                f.write(text)
            os.rename(tmp, target)
        for name in set(os.listdir(ddir)) - names:
            if not name.startswith(".tmp_"):
                os.unlink(os.path.join(ddir, name))


def dump_discovery(root, out):
    records = {}
    for bucket in ("instances", "mdc", "event_channels", "event_sources"):
        d = os.path.join(root, "v1", bucket)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.startswith(".tmp_"):
                continue
            records.setdefault(bucket, []).append({"file": name, "key": urllib.parse.unquote(name),
                                                   "value": json.loads(open(os.path.join(d, name)).read())})
    with open(out, "w") as f:
        json.dump(records, f, indent=1)
    return records


# --- main ----------------------------------------------------------------------------------------


def http(url, body=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


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
    with tempfile.TemporaryDirectory(prefix="kvcr-capture-") as tmp:
        capture_state_agent(args.out, {**os.environ, **peer_env(), "DYN_FILE_KV": os.path.join(tmp, "kv")}, free_port, wait_for)
    print(f"captured into {args.out}")


if __name__ == "__main__":
    main()
