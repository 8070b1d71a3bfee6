"""The prefill/decode half of the capture (capture-dynamo.py runs it): Dynamo's own mocker as one
prefill worker and one decode worker, each behind a recording proxy, and Dynamo's frontend routing
two chat requests (one streamed, one not) through both. Records both workers' discovery records,
what the frontend sends each leg and what each leg answers: disagg-bootstrap.json with the prefill
worker given a bootstrap port, disagg-no-bootstrap.json without."""
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from capture_wire import Recorder, dump_discovery, free_port, http, mirror, peer_env, wait_for


def instances(root):
    d = os.path.join(root, "v1", "instances")
    out = []
    for name in os.listdir(d) if os.path.isdir(d) else []:
        if name.startswith(".tmp_"):
            continue
        text = open(os.path.join(d, name)).read()
        if text:
            out.append(json.loads(text))
    return out


def generate_address(root, component):
    for v in instances(root):
        if v["component"] == component and v["endpoint"] == "generate":
            return v["transport"]["tcp"].split("/", 1)[0]
    return None


async def capture_disagg(out, model_dir, stop_processes, bootstrap):
    tmp = tempfile.mkdtemp(prefix="kvcr-capture-")
    procs = []
    try:
        worker_kv, frontend_kv = os.path.join(tmp, "worker-kv"), os.path.join(tmp, "frontend-kv")
        env = {**os.environ, **peer_env(), "DYN_FILE_KV": worker_kv}
        common = ["--model-path", model_dir, "--model-name", "mock-model", "--block-size", "16", "--speedup-ratio", "0",
                  "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]
        bootstrap_port = free_port() if bootstrap else None
        for mode, extra in (("prefill", ["--bootstrap-ports", str(bootstrap_port)] if bootstrap else []), ("decode", [])):
            log = open(os.path.join(tmp, f"{mode}.log"), "w")
            procs.append(subprocess.Popen([sys.executable, "-m", "dynamo.mocker", *common, "--disaggregation-mode", mode, *extra],
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
        prefill_addr = wait_for("the prefill worker's endpoint record", lambda: generate_address(worker_kv, "prefill"))
        decode_addr = wait_for("the decode worker's endpoint record", lambda: generate_address(worker_kv, "backend"))

        rec = Recorder(free_port())
        prefill_proxy = await rec.request_proxy(prefill_addr)
        decode_proxy = await rec.request_proxy(decode_addr)
        resp_server = await rec.response_proxy()
        proxies = {prefill_addr: f"127.0.0.1:{prefill_proxy.sockets[0].getsockname()[1]}",
                   decode_addr: f"127.0.0.1:{decode_proxy.sockets[0].getsockname()[1]}"}

        # The bootstrap port the prefill card advertises, behind a recorder too (decode -> prefill).
        handoff = []
        bootstrap_proxy = None
        if bootstrap:
            async def relay(cr, cw):
                sr, sw = await asyncio.open_connection("127.0.0.1", bootstrap_port)
                conv = {"decode_to_prefill": "", "prefill_to_decode": ""}
                handoff.append(conv)

                async def pump(r, w, key):
                    while chunk := await r.read(65536):
                        conv[key] += chunk.hex()
                        w.write(chunk)
                        await w.drain()
                    w.close()

                await asyncio.gather(pump(cr, sw, "decode_to_prefill"), pump(sr, cw, "prefill_to_decode"), return_exceptions=True)

            bootstrap_proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
        proxy_port = bootstrap_proxy.sockets[0].getsockname()[1] if bootstrap_proxy else None

        def rewrite(bucket, text):
            if bucket == "mdc" and proxy_port:
                return re.sub(rf'"bootstrap_port": ?{bootstrap_port}\b', f'"bootstrap_port":{proxy_port}', text)
            if bucket not in ("instances", "event_sources"):
                return text
            for real, proxy in proxies.items():
                text = text.replace(real, proxy)
            return text

        async def keep_mirroring():
            while True:
                mirror(worker_kv, frontend_kv, rewrite)
                await asyncio.sleep(1)

        mirror(worker_kv, frontend_kv, rewrite)
        mirroring = asyncio.get_running_loop().create_task(keep_mirroring())

        port = free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", str(port),
             "--router-mode", "kv", "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"],
            env={**env, "DYN_FILE_KV": frontend_kv}, stdout=open(os.path.join(tmp, "frontend.log"), "w"), stderr=subprocess.STDOUT))
        base = f"http://127.0.0.1:{port}"

        def model_listed():
            try:
                return '"mock-model"' in http(f"{base}/v1/models")
            except OSError:
                return False

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, wait_for, "the frontend to list mock-model", model_listed)
        await asyncio.sleep(2.0)  # the frontend activates its prefill router once it has seen the prefill card
        prompt = "Disaggregated serving splits the prompt from the answer. " * 3
        responses = []
        for stream in (True, False):
            body = {"model": "mock-model", "messages": [{"role": "user", "content": prompt}], "max_tokens": 4, "stream": stream}
            responses.append(await loop.run_in_executor(None, http, f"{base}/v1/chat/completions", body))
        mirroring.cancel()
        legs = {"prefill": [], "decode": []}
        for conn in rec.request_plane:
            for frame in conn["frames"]:
                if frame["path"].endswith("/generate"):
                    legs["prefill" if "/prefill/" in frame["path"] else "decode"].append(frame)
        json.dump({"bootstrap_port": bootstrap_port, "prompt": prompt, "responses": responses,
                   "discovery": dump_discovery(worker_kv, os.path.join(tmp, "discovery.json")),
                   "requests": legs, "response_plane": rec.response_plane, "handoff": handoff},
                  open(os.path.join(out, "disagg-bootstrap.json" if bootstrap else "disagg-no-bootstrap.json"), "w"), indent=1)
        for server in (prefill_proxy, decode_proxy, resp_server, bootstrap_proxy):
            if server is not None:
                server.close()
    finally:
        stop_processes(procs)
        shutil.rmtree(tmp, ignore_errors=True)
