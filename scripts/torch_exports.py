"""Write the export tables of a torch build's runtime libraries, for tests/torchabi/test_cxxnames.py.

    python scripts/torch_exports.py installed tests/data/torch-2.13.0-linux-x86_64-exports.txt.xz
    python scripts/torch_exports.py torch-2.13.0-cp311-cp311-win_amd64.whl \
        tests/data/torch-2.13.0-win-amd64-exports.txt.xz

The first argument is what ``torchwheel compat --against`` takes (``installed``, a torch
directory or a torch wheel, read without unpacking); the output is one ``library<TAB>symbol``
line per export, sorted, xz-compressed. Only the libraries torch loads at run time are
listed (compat's rule), not the test fixtures torch/lib also ships.
"""

from __future__ import annotations

import lzma
import sys
from pathlib import Path

from torchwheel.torchabi.torchlibs import read_torch


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    torch = read_torch(argv[0])
    lines = sorted(f"{lib}\t{name}" for lib, names in torch.exports.items() for name in names)
    Path(argv[1]).write_bytes(
        lzma.compress(("\n".join(lines) + "\n").encode(), preset=9 | lzma.PRESET_EXTREME)
    )
    print(f"{torch.label}: {len(torch.exports)} libraries, {len(lines)} exports -> {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
