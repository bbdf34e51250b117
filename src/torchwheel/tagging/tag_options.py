"""What a user chooses for ``tag`` and ``repair`` beyond what the binaries decide."""

from __future__ import annotations

from torchwheel.errors import InputError, InvalidValue
from torchwheel.frozen import frozen
from torchwheel.version import FeatureVersion


def build_torch_of(value: str, said: str) -> str:
    """``--build-torch`` / ``build_torch=``: ``X.Y``, or ``installed``, the torch installed
    in the environment running torchwheel (right after a build: the one it compiled
    against). ``said``: how the caller spells the option in its messages."""
    if value == "installed":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("torch").split("+", 1)[0]
        except PackageNotFoundError as exc:
            raise InputError(
                f"{said} installed: no torch is installed in this environment", reference="torch-unreadable"
            ) from exc
    try:
        FeatureVersion.parse(value)
    except ValueError as exc:
        raise InvalidValue(f"{said} {value!r}: expected X.Y (or 'installed')") from exc
    return value


@frozen
class TagOptions:
    upper_bound: str | None = None  # add ``,<X`` to a stable requirement
    keep_correct: bool = True  # keep the project's own requirement when it is already right
    build_torch: str | None = None  # X.Y for an unstable wheel's pin
    relax_pin: bool = False  # replace an author's pin (TW502) instead of keeping it
    build_tag: str | None = None  # file name build tag + WHEEL Build (release.naming)
    local_label: str | None = None  # 1.0 -> 1.0+LABEL in the file name and METADATA
    release_requirements: tuple[str, ...] | None = None  # one set for a whole release
