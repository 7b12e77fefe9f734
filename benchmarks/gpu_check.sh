#!/usr/bin/env bash
# What a session with a lent GPU runs, in one go (the device tool's `run`, from the repository root):
# the GPU tests, benchmarks/gpu_train.py, and the Train page on a real server against the headless
# engine (benchmarks/server_live.py). Logs go to $OUT (or ./gpu_check_out).
#
# The GPU machine has torch but not Streamlit: carry the app's other wheels in .whl (Python 3.12,
# manylinux x86_64; see /work/.library/device/README.md) and they are installed to /tmp/site first.
set -o pipefail
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, streamlit; print('torch', torch.__version__, 'streamlit', streamlit.__version__, torch.cuda.get_device_name(0))" | tee -a "$OUT/gpu.txt"

echo "== 1. GPU tests"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/core/test_training_gpu.py 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -15
echo "== 2. benchmarks/gpu_train.py"
timeout 150 python3 benchmarks/gpu_train.py --skip-cpu-run 2>&1 | tee "$OUT/gpu_train.txt" | grep -v '^{' | tail -40
echo "== 3. the Train page on a real server: the gpu preset"
timeout 170 python3 benchmarks/server_live.py --preset gpu --steps 6000 --repeats 2 2>&1 | tee "$OUT/server_live_gpu.txt" | grep -v '^{'
echo "== 4. the Train page on a real server: the best preset (GPU version, a smaller model: more steps/s)"
timeout 90 python3 benchmarks/server_live.py --preset best --steps 6000 --repeats 2 2>&1 | tee "$OUT/server_live_best.txt" | grep -v '^{'
if [ -n "$RECIPES" ]; then
  echo "== 5. recipes for the gpu preset (benchmarks/gpu_recipes.py)"
  timeout 200 python3 benchmarks/gpu_recipes.py 2>&1 | tee "$OUT/gpu_recipes.txt" | grep -v '^{'
fi
echo "== done"
