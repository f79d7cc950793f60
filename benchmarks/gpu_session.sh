#!/usr/bin/env bash
# One lease of a CUDA machine (issue 13, item 4), run from the repository root: the dataset sweep
# (benchmarks/measure_gpu.py), then the CLI's CUDA paths (time, calibrate, estimate on the calibrated device, a
# refusal). Everything lands in $OUT: gpu_env.json, gpu_measured.jsonl, sweep.log, cli.txt, calibrate.json,
# time_bf16.json. CLI=0 skips the CLI steps. BENCH_DEADLINE=S adds a second, shorter sweep with cuDNN's autotuner on
# (--cudnn-benchmark, BENCH_ARGS picks its cases) into $OUT/cudnn_benchmark/. DEV=cpu QUICK=--quick runs the same
# steps on a CPU (a dry run of the script itself). The core package needs requirements.txt's jsonschema, which a
# bare CUDA image may lack: carry it as wheels in .whl/.
set -u
export PYTHONUNBUFFERED=1 CNN_CALC_HOME=${CNN_CALC_HOME:-/tmp/cnn_calc_home}
OUT=${OUT:-/tmp/gpu_out}
PY=${PY:-python3}
DEV=${DEV:-cuda}
DEADLINE=${DEADLINE:-300}
mkdir -p "$OUT" "$CNN_CALC_HOME"
(nvidia-smi || true) > "$OUT/cli.txt" 2>&1
sweep() {
  $PY benchmarks/measure_gpu.py --out "$OUT" --device "$DEV" --deadline "$DEADLINE" ${QUICK:-} ${SWEEP_ARGS:-} \
    >> "$OUT/sweep.log" 2>&1
  echo "sweep exit $?" >> "$OUT/sweep.log"
}
# SWEEP=first (default), last (after the CLI steps) or none
[ "${SWEEP:-first}" = first ] && sweep
step() { echo "== $*"; timeout 150 "$@"; echo "exit $?"; }
[ "${CLI:-1}" = 1 ] && {
  step $PY -m core time resnet50 --device "$DEV" --batch 32
  step $PY -m core time resnet50 --device "$DEV" --batch 32 --dtype tf32
  step $PY -m core time resnet18 --device "$DEV" --batch 8 --per-layer --passes forward
  step $PY -m core time mobilenet_v2 --device "$DEV" --batches 1,8,64 --passes forward,train_step
  echo "== time resnet50 bf16 --json > time_bf16.json"
  timeout 150 $PY -m core time resnet50 --device "$DEV" --batch 32 --dtype bf16 --json > "$OUT/time_bf16.json"; echo "exit $?"
  echo "== calibrate --json > calibrate.json"
  timeout 200 $PY -m core calibrate --device "$DEV" --seconds 30 --dtypes fp32,tf32,bf16,fp16 --json > "$OUT/calibrate.json"
  echo "exit $?"
  step $PY -m core time resnet50 --device "$DEV" --batch 32 --passes forward
  step $PY -m core estimate resnet50 --device local --batch 32
  step $PY -m core time vgg16 --device "$DEV" --batch 100000
} >> "$OUT/cli.txt" 2>&1
[ "${SWEEP:-first}" = last ] && sweep
if [ -n "${BENCH_DEADLINE:-}" ]; then
  $PY benchmarks/measure_gpu.py --out "$OUT/cudnn_benchmark" --device "$DEV" --deadline "$BENCH_DEADLINE" \
    --cudnn-benchmark ${QUICK:-} ${BENCH_ARGS:-} > "$OUT/cudnn_benchmark.log" 2>&1
  echo "cudnn.benchmark sweep exit $?" >> "$OUT/cudnn_benchmark.log"
  tail -n 5 "$OUT/cudnn_benchmark.log"
fi
tail -n 40 "$OUT/sweep.log"
cat "$OUT/cli.txt" | cut -c1-200 | tail -n 150
