#!/bin/sh
# fetch_tflm_current.sh OUT_DIR - OUT_DIR/_runtime.so: the x86-64 TensorFlow Lite Micro runtime
# of tflite-micro's Python wheel, pinned by version and sha256, for the test that resolves the
# arena observer's hooks against real current TFLM's symbol table
# (debugger/audit/src/observers/arena/hooks.rs). The wheel comes from PyPI through pip; the
# .so stays under firmware/build/ (nothing is committed). It is not built for the board: only
# its symbols are read.
set -eu
out=$1
version=0.dev20261023182759
wheel=tflite_micro-$version-cp311-cp311-manylinux_2_28_x86_64.whl
sha256=15de433ac849d6bc09b314ce455347af480ebdb6335d8680e4fb8c3fd2b59af2
member=tflite_micro/python/tflite_micro/_runtime.so

[ -f "$out/_runtime.so" ] && [ -f "$out/$wheel.ok" ] && exit 0
command -v python3 >/dev/null || { echo "error: python3 not found (pip fetches the tflite-micro wheel)" >&2; exit 2; }
if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "installing: python3-pip"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi
mkdir -p "$out"
# The wheel for CPython 3.11 on x86-64 Linux whatever the host's python: only its .so is read.
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --implementation cp --python-version 3.11 --platform manylinux_2_28_x86_64 \
    -d "$out" "tflite-micro==$version"
echo "$sha256  $out/$wheel" | sha256sum -c --quiet - || {
    echo "error: $out/$wheel does not have the pinned sha256 $sha256" >&2
    rm -f "$out/$wheel"
    exit 2
}
python3 - "$out/$wheel" "$member" "$out/_runtime.so" <<'PY'
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
rm -f "$out/$wheel"
touch "$out/$wheel.ok"
echo "tflite-micro $version: $out/_runtime.so"
