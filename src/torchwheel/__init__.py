"""torchwheel: read, check and tag PyTorch-extension wheels by their stable-ABI target."""

from __future__ import annotations

__version__ = "0.1.0"
