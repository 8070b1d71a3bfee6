"""Step-time profiles from AIConfigurator's measured kernel database (run by
scripts/gen-timing-profiles.ts in the peers environment; writes one JSON per entry). With
`query`, answers points off the grid instead (bench/timing-profiles.ts checks the tables with it).

Each profile tabulates what AIConfigurator predicts for one forward pass of vLLM:
- prefill: one request prefilling `tokens` new tokens after `context` cached ones
  (static_ctx with isl = context + tokens, prefix = context), in ms;
- decode: one step of `batch` requests each at context `context` (static_gen, osl = 2:
  a single generation step), in ms.
The KV geometry comes from AIConfigurator's memory model (bytes per token per rank, weights and
other non-KV memory), so the mock sizes its GPU tier from --gpu-memory-utilization as vLLM does.
"""
import json
import sys
from importlib.metadata import version
from pathlib import Path

from aiconfigurator.sdk import config
from aiconfigurator.sdk.backends.factory import get_backend
from aiconfigurator.sdk.inference_session import InferenceSession
from aiconfigurator.sdk.models import get_model
from aiconfigurator.sdk.perf_database import get_database
from aiconfigurator_core.sdk.memory import KVCacheEstimator

ENTRIES = [
    # name, model id (bundled config), system, vLLM version, TP, MoE (tp, ep) or None
    ("llama-3.1-8b-h200-vllm0.24-tp1", "meta-llama/Meta-Llama-3.1-8B", "h200_sxm", "0.24.0", 1, None),
    ("qwen3-8b-h200-vllm0.24-tp1", "Qwen/Qwen3-8B", "h200_sxm", "0.24.0", 1, None),
    ("qwen3-8b-h100-vllm0.24-tp1", "Qwen/Qwen3-8B", "h100_sxm", "0.24.0", 1, None),
    ("qwen3-32b-h200-vllm0.24-tp2", "Qwen/Qwen3-32B", "h200_sxm", "0.24.0", 2, None),
    ("qwen3-32b-h100-vllm0.24-tp2", "Qwen/Qwen3-32B", "h100_sxm", "0.24.0", 2, None),
    ("qwen3-30b-a3b-h200-vllm0.24-tp1", "Qwen/Qwen3-30B-A3B", "h200_sxm", "0.24.0", 1, (1, 1)),
]
PREFILL_TOKENS = [1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
PREFILL_CONTEXT = [0, 1024, 4096, 8192, 16384, 32768, 65536, 131072]
DECODE_BATCH = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
DECODE_CONTEXT = [128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
MAX_NUM_BATCHED_TOKENS = 8192
MAX_NUM_SEQS = 256


def model_config(tp, moe):
    if moe is None:
        return config.ModelConfig(tp_size=tp)
    return config.ModelConfig(tp_size=tp, moe_tp_size=moe[0], moe_ep_size=moe[1])


def non_decreasing(rows):
    """Lift a time that falls as the first axis grows to the one before it (the database's kernel
    choice can make a larger batch a few percent faster); returns the rows and the largest lift."""
    out, lift = [list(rows[0])], 0.0
    for row in rows[1:]:
        lifted = [max(v, prev) for v, prev in zip(row, out[-1])]
        lift = max([lift] + [(l - v) / l for v, l in zip(row, lifted) if l > 0])
        out.append(lifted)
    return out, lift


def estimators(name, model_id, system, vllm, tp, moe):
    """AIConfigurator's time of one prefill pass (tokens after context) and one decode step."""
    db = get_database(system=system, backend="vllm", version=vllm)
    if db is None:
        raise SystemExit(f"{name}: no AIConfigurator database for {system} vllm {vllm}")
    model = get_model(model_path=model_id, model_config=model_config(tp, moe), backend_name="vllm")
    session = InferenceSession(model=model, database=db, backend=get_backend("vllm"))

    def prefill(tokens, context):
        rc = config.RuntimeConfig(batch_size=1, isl=context + tokens, osl=1, prefix=context)
        return round(float(session.run_static_latency_only(rc, mode="static_ctx")), 4)

    def decode(batch, context):
        rc = config.RuntimeConfig(batch_size=batch, isl=context, osl=2, prefix=0)
        return round(float(session.run_static_latency_only(rc, mode="static_gen")), 4)

    return prefill, decode


def profile(name, model_id, system, vllm, tp, moe):
    prefill, decode = estimators(name, model_id, system, vllm, tp, moe)

    moe_kwargs = {} if moe is None else {"moe_tp_size": moe[0], "moe_ep_size": moe[1]}
    memory = KVCacheEstimator.from_request(
        model_id, system, "vllm", vllm, max_num_tokens=MAX_NUM_BATCHED_TOKENS, max_batch_size=MAX_NUM_SEQS, tp_size=tp, **moe_kwargs
    ).breakdown
    prefill_ms, prefill_lift = non_decreasing([[prefill(t, c) for c in PREFILL_CONTEXT] for t in PREFILL_TOKENS])
    decode_ms, decode_lift = non_decreasing([[decode(b, c) for c in DECODE_CONTEXT] for b in DECODE_BATCH])
    return {
        "schema": "kvcr-mock/timing-profile/1",
        "name": name,
        "provenance": {
            "source": f"AIConfigurator {version('aiconfigurator')} perf database (aiconfigurator-core {version('aiconfigurator-core')}): kernel latencies measured on the GPU, composed per forward pass",
            "system": system,
            "framework": "vllm",
            "frameworkVersion": vllm,
            "model": model_id,
            "tensorParallelSize": tp,
            "licence": "Apache-2.0 (AIConfigurator and its database)",
            "generatedBy": "scripts/gen-timing-profiles.ts",
            "notes": (
                "prefill: static_ctx (isl = context + tokens, prefix = context); decode: static_gen with osl 2 (one step); "
                f"times made non-decreasing in tokens and batch (largest lift {prefill_lift:.1%} prefill, {decode_lift:.1%} decode)"
            ),
        },
        "interpolation": "bilinear",
        "kv": {
            "kvBytesPerToken": int(memory["kv_size_per_token_bytes"]),
            "gpuMemoryBytes": int(memory["gpu_memory_capacity_bytes"]),
            "nonKvBytes": int(memory["non_kv_bytes"]),
        },
        "prefill": {
            "tokens": PREFILL_TOKENS,
            "context": PREFILL_CONTEXT,
            "ms": prefill_ms,
        },
        "decode": {
            "x": "batch",
            "batch": DECODE_BATCH,
            "context": DECODE_CONTEXT,
            "ms": decode_ms,
        },
    }


def query():
    """stdin {"name", "prefill": [[tokens, context]...], "decode": [[batch, context]...]} -> the same with times in ms."""
    q = json.load(sys.stdin)
    entry = next((e for e in ENTRIES if e[0] == q["name"]), None)
    if entry is None:
        raise SystemExit(f"no entry {q['name']}")
    prefill, decode = estimators(*entry)
    print(json.dumps({"prefill": [prefill(t, c) for t, c in q["prefill"]], "decode": [decode(b, c) for b, c in q["decode"]]}))


def main():
    if sys.argv[1] == "query":
        return query()
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for entry in ENTRIES:
        p = profile(*entry)
        (out / f"{entry[0]}.json").write_text(json.dumps(p, indent=1) + "\n")
        print(f"wrote {entry[0]}", file=sys.stderr)


if __name__ == "__main__":
    main()
