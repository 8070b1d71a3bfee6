"""The LoRA half of the capture (capture-dynamo.py runs it): a worker written with Dynamo's own
Python API registers a base model and one LoRA adapter on its endpoint (`register_model` with
`lora_name` and `base_model_path`, as Dynamo's vLLM worker does), and Dynamo's frontend is asked
for each by name. Records the cards and what the worker receives for each, into lora.json."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from capture_wire import dump_discovery, free_port, http, peer_env, wait_for

WORKER = r'''
import asyncio, json, sys, uvloop
from dynamo.llm import ModelInput, ModelRuntimeConfig, ModelType, WorkerType, register_model
from dynamo.runtime import DistributedRuntime, dynamo_worker
model_dir, out = sys.argv[1], sys.argv[2]
@dynamo_worker()
async def worker(runtime: DistributedRuntime):
    ep = runtime.endpoint("dynamo.backend.generate")
    async def serve(req):
        with open(out, "a") as f:
            f.write(json.dumps(req) + "\n")
        n = len(req["token_ids"])
        yield {"token_ids": [65], "completion_usage": {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1}}
        yield {"token_ids": [], "finish_reason": "length", "completion_usage": {"prompt_tokens": n, "completion_tokens": 2, "total_tokens": n + 2}}
    rc = ModelRuntimeConfig()
    rc.total_kv_blocks = 1024
    kinds = ModelType.Chat | ModelType.Completions
    await register_model(ModelInput.Tokens, kinds, ep, model_dir, "mock-model", worker_type=WorkerType.Aggregated, kv_cache_block_size=16, runtime_config=rc)
    await register_model(ModelInput.Tokens, kinds, ep, model_dir, worker_type=WorkerType.Aggregated, kv_cache_block_size=16, runtime_config=rc,
                         user_data={"lora_adapter": True, "lora_id": 1}, lora_name="sql-adapter", base_model_path=model_dir, ignore_weights=True)
    print("registered", flush=True)
    await ep.serve_endpoint(serve)
uvloop.run(worker())
'''


def capture_lora(out, model_dir, stop_processes):
    tmp = tempfile.mkdtemp(prefix="kvcr-capture-")
    procs = []
    try:
        kv = os.path.join(tmp, "kv")
        env = {**os.environ, **peer_env(), "DYN_FILE_KV": kv}
        seen = os.path.join(tmp, "requests.jsonl")
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, model_dir, seen], env=env,
                                      stdout=open(os.path.join(tmp, "worker.log"), "w"), stderr=subprocess.STDOUT))
        port = free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", str(port),
             "--router-mode", "kv", "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"],
            env=env, stdout=open(os.path.join(tmp, "frontend.log"), "w"), stderr=subprocess.STDOUT))
        base = f"http://127.0.0.1:{port}"

        def both_listed():
            try:
                models = http(f"{base}/v1/models")
                return '"mock-model"' in models and '"sql-adapter"' in models and models
            except OSError:
                return False

        models = json.loads(wait_for("the frontend to list mock-model and sql-adapter", both_listed))
        answers = {}
        for model in ("mock-model", "sql-adapter"):
            body = {"model": model, "messages": [{"role": "user", "content": "Adapters share the base model's tokenizer."}], "max_tokens": 2}
            answers[model] = json.loads(http(f"{base}/v1/chat/completions", body))
        requests = [json.loads(line) for line in open(seen)]
        json.dump({"models": models, "answers": answers, "requests": requests,
                   "discovery": dump_discovery(kv, os.path.join(tmp, "discovery.json"))},
                  open(os.path.join(out, "lora.json"), "w"), indent=1)
    finally:
        stop_processes(procs)
        shutil.rmtree(tmp, ignore_errors=True)
