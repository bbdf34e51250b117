"""A torch the user names (``--torch`` of ``select``, ``install``, ``doctor``, ``index`` and
``matrix``; ``torch=`` of ``api.loads_on`` and ``api.doctor``): one value shape, ``X.Y`` (every
release of that minor) or ``X.Y.Z`` (that release), read here and nowhere else, so that every
command refuses the same spellings with the same line."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.errors import InvalidValue, clipped


def named_torch(text: str, what: str = "--torch") -> Version:
    """``text`` as a torch version of two or three release numbers (a local label or a
    pre-release, as ``torch.__version__`` prints them, is kept for the caller to judge);
    ``what`` names the option or argument in the one-line error."""
    try:
        version = Version(limits.check_version(what, text))
    except InvalidVersion as exc:
        raise InvalidValue(
            f"{what} {clipped(text, 40)!r}: not a version (X.Y or X.Y.Z)", field=what, value=text
        ) from exc
    if len(version.release) not in (2, 3):
        raise InvalidValue(
            f"{what} {clipped(text, 40)!r}: give a torch release as X.Y or X.Y.Z", field=what, value=text
        )
    return version
