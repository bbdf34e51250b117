"""What a user chooses for ``tag`` and ``repair`` beyond what the binaries decide."""

from __future__ import annotations

from torchwheel.frozen import frozen


@frozen
class TagOptions:
    upper_bound: str | None = None  # add ``,<X`` to a stable requirement
    keep_correct: bool = True  # keep the project's own requirement when it is already right
    build_torch: str | None = None  # X.Y for an unstable wheel's pin
    relax_pin: bool = False  # replace an author's pin (TW502) instead of keeping it
    build_tag: str | None = None  # file name build tag + WHEEL Build (release.naming)
    local_label: str | None = None  # 1.0 -> 1.0+LABEL in the file name and METADATA
    release_requirements: tuple[str, ...] | None = None  # one set for a whole release
