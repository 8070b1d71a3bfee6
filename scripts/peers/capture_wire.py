"""What the captures share: Dynamo's peer environment, the request- and response-plane recorder
(a proxy per worker, the call-home address rewritten to a second proxy), the event-frame decoder and
the discovery-directory mirror."""
import asyncio
import json
import os
import socket
import struct
import time
import urllib.parse
import urllib.request

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

        # bytes (a msgpack bin) are kept as hex, so the record stays JSON
        return {"msgpack": json.loads(json.dumps(msgspec.msgpack.decode(body), default=lambda b: {"bin_hex": b.hex()}))}
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
