#!/usr/bin/env bash
# The GPU runs of issue 17, stage by stage, on a CUDA machine with no network (docs/benchmarks.md,
# "GPU runs"). Run from the repository root; every stage writes into $RES as it goes, so a call
# cut short keeps what finished, and later calls on the same machine add to it. Where $OUT is set
# (the device tool's folder of files to bring back: at most 8), $RES is packed into
# $OUT/gpu_results.tgz at the end, with session.log beside it. A failing stage is reported and
# the next one runs; the exit status is the number of failed stages.
#
#   bash benchmarks/gpu/session.sh unpack env kernels bench smoke
#   bash benchmarks/gpu/session.sh unpack env recheck
#   RUNS=3 bash benchmarks/gpu/session.sh unpack time:softmax-not-enough time:scan
#
# Stages:
#   unpack        collect the carried .gpu/partNN (benchmarks/gpu/kit.py) into $STAGE, build what
#                 is complete: wheels into $STAGE/site, the book, the two models as packages
#   env           GPU, driver, python and package versions (env.txt)
#   kernels       tests/test_kernels_triton.py's CUDA and Hopper-compile cases: the compiled kernel
#                 against float64 (kernels.log; KERNEL_TESTS: another -k expression)
#   gputests      every test whose name says cuda or gpu (gputests.log)
#   bench         benchmarks/bench_triton.py: bf16 d=128 and fp16 d=64 GQA×4, 1K-64K (bench_*.md)
#   smoke[:A,B]   each command (or A, B, ...) with --quick on $DEVICE: does it run there?
#                 (smoke.md, smoke_NAME.log, a failure's full traceback kept: --traceback)
#   recheck       what the first H100 session left open (issue 54), in one call once the models
#                 are staged: the kernels stage, then smoke:limitations (kernels.xml, kernels.log,
#                 smoke_limitations.log)
#   time:NAME     NAME run $RUNS times from an empty folder with pyperf (time_NAME.json), and the
#                 median, min, max and peak RSS (times.md); NAME is one of the keys of CMDS below
#
# Settings (environment): RES (/root/attnlimits-gpu/results), STAGE (/root/attnlimits-gpu),
# DEVICE (cuda; cpu for a dry run on a CPU machine), RUNS (3), PYTHON (python3), EXTRA (words
# added to every timed command: EXTRA=--quick for a dry run), OUT.
set -uo pipefail

STAGE=${STAGE:-/root/attnlimits-gpu}
RES=${RES:-$STAGE/results}
DEVICE=${DEVICE:-cuda}
RUNS=${RUNS:-3}
EXTRA=${EXTRA:-}
PY=${PYTHON:-python3}
mkdir -p "$RES"
export PYTHONPATH="$PWD/src:$STAGE/site${PYTHONPATH:+:$PYTHONPATH}"
export ATTNLIMITS_TEXT="$STAGE/data/war_and_peace.txt" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export MPLBACKEND=Agg

declare -A CMDS=(
  [limitations]="reproduce limitations"
  [softmax-not-enough]="reproduce softmax-not-enough"
  [cross-normalizers]="reproduce softmax-not-enough --normalizers softmax,adaptive,ssmax,sparsemax,entmax15,topk,sigmoid,stick_breaking"
  [scan]="scan smollm2-135m"
  [compare]="compare"
  [long-context]="demo long-context"
  [clrs-text]="reproduce clrs-text"
)
SMOKE=(limitations softmax-not-enough scan compare long-context clrs-text)

failed=0
note() { printf '%s\n' "$*" | tee -a "$RES/session.log"; }
bring_back() {
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    tar czf "$OUT/gpu_results.tgz" -C "$RES" . && cp "$RES/session.log" "$OUT/"
  fi
}
trap bring_back EXIT
attnlimits() { "$PY" -m attnlimits.cli "$@"; }

stage_unpack() { "$PY" benchmarks/gpu/kit.py unpack .gpu --stage "$STAGE"; }

stage_env() {
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    grep -m1 'model name' /proc/cpuinfo; nproc
    "$PY" - <<'EOF'
import importlib.metadata as md, torch
print("python", __import__("sys").version.split()[0], "torch", torch.__version__,
      "cuda", torch.version.cuda, "device", torch.cuda.get_device_name() if torch.cuda.is_available() else None)
for name in ("triton", "transformers", "regex", "numba", "numpy", "gguf", "entmax", "pyperf", "pandas", "pyarrow"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "MISSING")
import attnlimits.cli  # noqa: F401  every import the commands need
print("attnlimits imports")
EOF
  } > "$RES/env.txt" 2>&1
  cat "$RES/env.txt"
}

stage_kernels() {
  # the compiled kernel's cases only (the interpreter's run in CI on the CPU: about 3 min there,
  # device time here), spread over 8 processes: most of their time is Triton compiling
  "$PY" -m pytest -p no:cacheprovider tests/test_kernels_triton.py -q -rs -n 8 \
    -k "${KERNEL_TESTS:-cuda or hopper}" --junitxml="$RES/kernels.xml" 2>&1 | tee "$RES/kernels.log"
}

stage_gputests() {
  "$PY" -m pytest -p no:cacheprovider tests -q -rs -k "cuda or gpu" -n 4 \
    2>&1 | tee "$RES/gputests.log"
}

stage_bench() {
  "$PY" benchmarks/bench_triton.py --out "$RES/bench_bf16_d128.md" &&
    "$PY" benchmarks/bench_triton.py --dtype float16 --d 64 --heads 32 --group 4 \
      --out "$RES/bench_fp16_d64_gqa4.md"
}

stage_smoke() {
  local rc=0 name names=("${SMOKE[@]}")
  [ -n "${1:-}" ] && IFS=, read -r -a names <<< "$1"
  [ -f "$RES/smoke.md" ] || printf '| command | rc | s |\n|---|---:|---:|\n' > "$RES/smoke.md"
  for name in "${names[@]}"; do
    if [ -z "${CMDS[$name]:-}" ]; then note "unknown command '$name'"; rc=1; continue; fi
    local t0=$SECONDS
    # shellcheck disable=SC2086  # CMDS holds the words of a command
    # --traceback: a failure's log keeps where it came from above its error: line (the first
    # H100 session's limitations NaN left one line only)
    attnlimits --traceback ${CMDS[$name]} --quick --device "$DEVICE" \
      --out "/tmp/attnlimits-smoke/$name" --fresh > "$RES/smoke_$name.log" 2>&1
    local r=$?
    echo "| $name | $r | $((SECONDS - t0)) |" | tee -a "$RES/smoke.md"
    [ $r -eq 0 ] || rc=1
  done
  return $rc
}

stage_recheck() {
  # the CUDA kernel tests (float32 now held to float32 arithmetic's own error, not 1e-5) and
  # reproduce limitations --quick on $DEVICE (NaN in its first layer on 2026-11-26): both run,
  # whichever fails
  local rc=0
  stage_kernels || rc=1
  stage_smoke limitations || rc=1
  return $rc
}

stage_time() {
  local name=$1 words=${CMDS[$1]:-}
  if [ -z "$words" ]; then note "unknown command '$name' (one of: ${!CMDS[*]})"; return 2; fi
  local dir="/tmp/attnlimits-time/$name"
  rm -f "$RES/time_$name.json"  # pyperf refuses to overwrite
  # each of the RUNS processes starts from an empty folder; -w 0 -l 1: one timed value each;
  # --copy-env: pyperf's workers otherwise drop PYTHONPATH and ATTNLIMITS_TEXT (the first H100
  # run, 2026-11-26, failed so: "could not find War and Peace locally")
  "$PY" -m pyperf command --copy-env -p "$RUNS" -n 1 -w 0 -l 1 -o "$RES/time_$name.json" -- \
    sh -c "rm -rf '$dir' && exec $PY -m attnlimits.cli $words $EXTRA --device $DEVICE --out '$dir' >> '$RES/time_$name.log' 2>&1" \
    || return 1
  "$PY" benchmarks/gpu/times.py "$RES/time_$name.json" "attnlimits $words $EXTRA --device $DEVICE" \
    | tee -a "$RES/times.md"
}

for stage in "$@"; do
  t0=$SECONDS
  note "== $stage (started $(date -u +%H:%M:%S))"
  case $stage in
    time:*) stage_time "${stage#time:}" ;;
    smoke:*) stage_smoke "${stage#smoke:}" ;;
    unpack | env | kernels | gputests | bench | smoke | recheck) "stage_$stage" ;;
    *) note "unknown stage '$stage'"; false ;;
  esac
  rc=$?
  note "== $stage: rc $rc, $((SECONDS - t0)) s"
  [ $rc -eq 0 ] || failed=$((failed + 1))
done
exit $failed
