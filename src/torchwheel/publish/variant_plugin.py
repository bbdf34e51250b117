"""The wheel-variant provider plugin for the ``torchwheel`` namespace (DRAFT standards).

Registered as entry point ``torchwheel`` in the group ``variant_plugins`` and named by
``plugin-api`` in every ``variant.json`` torchwheel writes. Installers run it in the
*target* environment (variantlib: a subprocess of ``venv_python_executable``), so the torch
it sees is the one the wheel will load on. Standalone on purpose: only the standard library
and torchwheel's variant names and symbol table (no third-party imports), so it runs in any environment that
has torchwheel installed, even without its dependencies.

Supported values follow the lower-bound pattern: ``stable_abi`` is every known target <=
the installed torch's minor, newest first (a floor of 2.10 loads on 2.13); ``build_torch``
is the installed minor only (a version-locked build). No torch: nothing is supported.
``TORCHWHEEL_VARIANT_TORCH=X.Y`` (or ``none``) overrides the detection for build farms
that prepare environments for a torch they do not run.
"""

from __future__ import annotations

import os
from dataclasses import field
from importlib.metadata import PackageNotFoundError, version

from torchwheel.frozen import frozen
from torchwheel.wheel.variant_json import LOCKED, NAMESPACE, STABLE

ENV_OVERRIDE = "TORCHWHEEL_VARIANT_TORCH"


@frozen
class FeatureConfig:
    """variantlib's ``VariantFeatureConfigType``: name, values (best first), multi_value."""

    name: str
    values: list[str] = field(default_factory=list)
    multi_value: bool = False


def _minor(text: str) -> tuple[int, int] | None:
    parts = text.split("+", 1)[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def detected_torch() -> tuple[int, int] | None:
    """The override, else the torch distribution of the running interpreter."""
    override = os.environ.get(ENV_OVERRIDE)
    if override is not None:
        if override.strip().lower() in ("", "none"):
            return None
        found = _minor(override.strip())
        if found is None:
            raise ValueError(f"{ENV_OVERRIDE}={override!r}: expected X.Y or 'none'")
        return found
    try:
        return _minor(version("torch"))
    except PackageNotFoundError:
        return None


def known_targets() -> list[tuple[int, int]]:
    from torchwheel.tables.symtable import load_shipped

    return sorted({m for s in load_shipped().sources if (m := _minor(s)) is not None})


def _values(minors: list[tuple[int, int]]) -> list[str]:
    return [f"{a}.{b}" for a, b in sorted(set(minors), reverse=True)]


class TorchABIPlugin:
    """Stateless: variantlib calls the class methods in a fresh subprocess."""

    namespace = NAMESPACE
    all_properties_compatible = False  # depends on the installed torch

    @classmethod
    def get_all_configs(cls) -> list[FeatureConfig]:
        every = known_targets()
        torch = detected_torch()
        if torch is not None:
            every.append(torch)
        return [FeatureConfig(STABLE, _values(every)), FeatureConfig(LOCKED, _values(every))]

    @classmethod
    def get_supported_configs(cls) -> list[FeatureConfig]:
        torch = detected_torch()
        if torch is None:
            return []
        floors = [m for m in known_targets() if m <= torch] + [torch]
        # stable first, as ``select`` ranks: a stable wheel survives a torch upgrade
        return [FeatureConfig(STABLE, _values(floors)), FeatureConfig(LOCKED, _values([torch]))]
