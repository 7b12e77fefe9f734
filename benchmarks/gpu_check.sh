#!/usr/bin/env bash
# What a session with a lent GPU runs, in one go (the device tool's `run`, from the repository root):
# the GPU tests, the Train page in headless Chromium on a real server against the headless engine
# (benchmarks/server_live.py --browser), the gpu preset's recipes (benchmarks/gpu_recipes.py) and
# benchmarks/gpu_train.py. Logs go to $OUT (or ./gpu_check_out). Steps run in order of importance
# while time is left (BUDGET_S, default 520 s: the device tool's calls stop at 600 s).
#
# The GPU machine has torch but not Streamlit: carry the app's other wheels in .whl (Python 3.12,
# manylinux x86_64; see /work/.library/device/README.md) and they are installed to /tmp/site first.
# Chromium and Playwright (~145 MB packed by benchmarks/pack_for_gpu.sh, more than one call may carry) travel in parts: earlier
# calls copy .crN/part* into $CHROMIUM_PARTS (default /tmp/parts); when all three are there they are
# unpacked to /tmp/cr (Chromium, the libraries it links, DejaVu fonts, the playwright package), and
# the live runs use the browser; otherwise they use the websocket client (the same server work).
set -o pipefail
OUT=${OUT:-gpu_check_out}
BUDGET_S=${BUDGET_S:-520}
PARTS=${CHROMIUM_PARTS:-/tmp/parts}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH  # bin: py-spy's binary

BROWSER=""
if [ -f "$PARTS/part1" ] && [ -f "$PARTS/part2" ] && [ -f "$PARTS/part3" ]; then
  mkdir -p /tmp/cr && cat "$PARTS"/part1 "$PARTS"/part2 "$PARTS"/part3 | xz -d | tar -C /tmp/cr -xf - || echo "unpacking Chromium failed"
  if [ -x /tmp/cr/chromium/chromium ]; then
    mkdir -p /usr/share/fonts/truetype && cp -r /tmp/cr/fonts/dejavu /usr/share/fonts/truetype/ 2>/dev/null
    [ -d /etc/fonts ] || cp -r /tmp/cr/etc/fonts /etc/fonts
    # the carried libraries for Chromium alone: Python and torch keep the machine's own
    printf '#!/bin/sh\nexport LD_LIBRARY_PATH=/tmp/cr/lib\nexec /tmp/cr/chromium/chromium "$@"\n' > /tmp/cr/chromium-run
    chmod +x /tmp/cr/chromium-run
    export ATTENTION_LAB_CHROMIUM=/tmp/cr/chromium-run PYTHONPATH=$PYTHONPATH:/tmp/cr/site
    LD_LIBRARY_PATH=/tmp/cr/lib ldd /tmp/cr/chromium/chromium | grep "not found" | tee "$OUT/chromium_missing.txt"
    # Playwright's node needs libatomic, which a bare machine may lack: carried beside part1
    if ! ldconfig -p | grep -q libatomic.so.1 && [ -f .cr1/libatomic.so.1 ]; then
      mkdir -p /tmp/cr/nodelib && cp .cr1/libatomic.so.1 /tmp/cr/nodelib/
      printf '#!/bin/sh\nexport LD_LIBRARY_PATH=/tmp/cr/nodelib\nexec %s "$@"\n' /tmp/cr/site/playwright/driver/node > /tmp/cr/node-run
      chmod +x /tmp/cr/node-run && export PLAYWRIGHT_NODEJS_PATH=/tmp/cr/node-run
    fi
    /tmp/cr/chromium-run --version && BROWSER=--browser
  fi
else
  echo "Chromium parts missing in $PARTS: $(ls "$PARTS" 2>/dev/null | tr '\n' ' ')"
fi

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, streamlit; print('torch', torch.__version__, 'streamlit', streamlit.__version__, torch.cuda.get_device_name(0))" | tee -a "$OUT/gpu.txt"

step() {  # step NAME SECONDS COMMAND...: run when SECONDS are left in the budget, log to $OUT/NAME.txt
  local name=$1 need=$2; shift 2
  if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi  # ONLY="live_gpu ...": just those
  local left=$((BUDGET_S - SECONDS))
  if [ "$left" -lt "$need" ]; then echo "== $name: skipped, ${left}s left"; return; fi
  echo "== $name (at ${SECONDS}s)"
  timeout "$need" "$@" 2>&1 | tee "$OUT/$name.txt" | grep -v '^{' | tail -${TAIL:-25}
}

GIL=""
command -v py-spy >/dev/null && GIL="--gil-profile 8"  # which threads hold the GIL during the first live run
step live_gpu 120 python3 benchmarks/server_live.py $BROWSER --preset gpu --steps ${LIVE_STEPS:-2000} --repeats ${REPEATS:-2} $GIL
# the same with Python's own 5 ms GIL hand-over while the worker trains (core.live_training.WORKER_SWITCH)
step live_gpu_switch_off 120 env ATTENTION_LAB_WORKER_SWITCH_MS=off python3 benchmarks/server_live.py $BROWSER --preset gpu --steps ${LIVE_STEPS:-2000} --repeats ${REPEATS:-2} $GIL
step gil_handover 20 python3 benchmarks/gil_handover.py
step gpu_train 110 python3 benchmarks/gpu_train.py --skip-cpu-run
step live_gpu_ticks 75 python3 benchmarks/server_live.py $BROWSER --preset gpu --steps ${LIVE_STEPS:-2000} --repeats 1 --background off
step live_best 75 python3 benchmarks/server_live.py $BROWSER --preset best --steps 3000 --repeats 2
step pytest_gpu 60 python3 -m pytest -q -p no:cacheprovider -o addopts=-ra tests/core/test_training_gpu.py tests/core/test_training_ema.py
[ -n "$RECIPES" ] && step recipes 200 python3 benchmarks/gpu_recipes.py --only $RECIPES
echo "== done at ${SECONDS}s"
