"""The 64-bit ``TORCH_FEATURE_VERSION`` as a value type.

PyTorch packs a release into one integer (``torch/headeronly/version.h``):
``[major:8][minor:8][patch:8][abi_tag:40]``. The marker, the companion symbols and the
symbol table all speak this integer, so one type owns the packing, the parsing of user
spellings (``2.10``, ``2.10.0``, ``0x020A000000000000``) and the ordering.
"""

from __future__ import annotations

import re
from functools import total_ordering

from torchwheel.frozen import frozen

_ABI_TAG_BITS = 40
_ABI_TAG_MAX = (1 << _ABI_TAG_BITS) - 1
_SPELLING = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:\+abi(\d+))?\s*$")


@total_ordering
@frozen
class FeatureVersion:
    """A torch release as the stable ABI sees it: ordering follows the packed integer."""

    major: int
    minor: int
    patch: int = 0
    abi_tag: int = 0

    def __post_init__(self) -> None:
        for name in ("major", "minor", "patch"):
            value = getattr(self, name)
            if not 0 <= value <= 0xFF:
                raise ValueError(f"{name} {value} does not fit in one byte")
        if not 0 <= self.abi_tag <= _ABI_TAG_MAX:
            raise ValueError(f"abi tag {self.abi_tag} does not fit in 40 bits")

    @classmethod
    def from_int(cls, value: int) -> FeatureVersion:
        if not 0 <= value < 1 << 64:
            raise ValueError(f"feature version {value:#x} is not a 64-bit unsigned integer")
        return cls(
            major=(value >> 56) & 0xFF,
            minor=(value >> 48) & 0xFF,
            patch=(value >> 40) & 0xFF,
            abi_tag=value & _ABI_TAG_MAX,
        )

    @classmethod
    def parse(cls, text: str) -> FeatureVersion:
        """Accept what users type: ``2.10``, ``2.10.0``, ``2.10.0+abi7`` or a hex integer."""
        stripped = text.strip()
        if len(stripped) > 64:  # four packed bytes spell in 20 characters; int() of 4,300 digits raises
            raise ValueError(
                f"not a torch feature version: {stripped[:40]!r}... ({len(stripped):,} characters)"
            )
        if stripped.lower().startswith("0x"):
            try:
                return cls.from_int(int(stripped, 16))
            except ValueError as exc:
                raise ValueError(f"not a torch feature version: {text!r}") from exc
        match = _SPELLING.match(stripped)
        if match is None:
            raise ValueError(f"not a torch feature version: {text!r} (expected e.g. 2.10 or 2.10.0)")
        major, minor, patch, tag = match.groups()
        return cls(int(major), int(minor), int(patch or 0), int(tag or 0))

    def to_int(self) -> int:
        return (self.major << 56) | (self.minor << 48) | (self.patch << 40) | self.abi_tag

    def to_bytes(self) -> bytes:
        return self.to_int().to_bytes(8, "big")

    @property
    def release(self) -> str:
        """``major.minor.patch`` without the ABI tag: what pip and torch.__version__ speak."""
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def minor_release(self) -> str:
        return f"{self.major}.{self.minor}"

    def __str__(self) -> str:
        return self.release if self.abi_tag == 0 else f"{self.release}+abi{self.abi_tag}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, FeatureVersion):
            return NotImplemented
        return self.to_int() < other.to_int()
