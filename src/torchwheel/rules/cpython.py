"""TW3xx: CPython ABI: wheel tags vs module file names vs hooks vs symbols.

The facts and their meaning come from the public specifications: the platform compatibility
tags and binary distribution format specs (PEP 425, PEP 427), module file names (PEP 3149),
the stable ABIs (PEP 384 abi3, PEP 803 abi3t) and CPython's ``Doc/c-api/stable.rst``; each
rule here is one consistency check between them that a wheel's own bytes can decide.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.version import Version

from torchwheel.analysis.member import MemberBinary, loaded_by_import
from torchwheel.analysis.pyimports import module_name
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.analysis.wheelfacts import WheelFacts, iter_slices
from torchwheel.rules.registry import Hit, Policy, rule

_NAMED = 10  # hooks a message spells out; the rest are counted


def _tags(w: WheelFacts) -> frozenset[Tag]:
    return w.contents.filename_tags or w.contents.wheel_tags


def _by_import(w: WheelFacts, b: MemberBinary, module: str | None) -> bool:
    """Whether Python's import system is what loads ``b``, so that its file name matters.

    The package's own loader decides (``analysis.reach``): a file its code imports as a
    module is imported; a file it only loads by path (``torch.ops.load_library``,
    ``ctypes.CDLL``) is not, whatever it exports or imports (the everyday
    ``torch/extension.h`` op library imports ``Py*`` and has no hook). Where no loader code
    names it: an extension module (it has a hook), or a hook-less file that calls the C API
    (a module that lost its hook), is imported; a hook-less file without CPython symbols (a
    helper library) only if the wheel's own Python code imports it by name.
    """
    decided = loaded_by_import(w.reach.of(b.member).how, b)
    if decided is not None:
        return decided
    return module is not None and module_name(b.member, module) in w.py_imports


def _abi3_floor(tags: frozenset[Tag]) -> tuple[int, int] | None:
    """The lowest Python an abi3 tag admits: installers honour the lowest cpXY."""
    floors = [
        (3, int(t.interpreter[3:]))
        for t in tags
        if t.abi in ("abi3", "abi3t") and t.interpreter.startswith("cp3") and t.interpreter[3:].isdigit()
    ]
    return min(floors, default=None)


def _requires_python_floor(w: WheelFacts) -> tuple[int, int] | None:
    """The lowest CPython 3.x that ``Requires-Python`` admits: pip and uv never install the
    wheel below it, whatever the tag says (vLLM ships cp38-abi3 with Requires-Python >=3.11)."""
    spec = w.metadata.requires_python
    return None if spec is None else _floor_of(spec)


@functools.lru_cache(maxsize=256)
def _floor_of(spec: SpecifierSet) -> tuple[int, int] | None:
    """Up to 3,000 releases tried: once per specifier in a run (``index`` judges every wheel
    of a folder, most with the same ``Requires-Python``)."""
    for minor in range(0, 100):
        if any(spec.contains(Version(f"3.{minor}.{patch}"), prereleases=True) for patch in range(0, 30)):
            return (3, minor)
    return None


@rule("TW301")
def abi3_not_limited(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    if not any(t.abi in ("abi3", "abi3t") for t in _tags(w)):
        return
    for member, arch, s in iter_slices(w):
        p = s.python
        if p.verdict.startswith("version-specific"):
            more = len(p.non_limited_symbols) - 4
            why = ", ".join(p.non_limited_symbols[:4]) + (f" and {more} more" if more > 0 else "")
            why = why or p.python_dll or "free-threaded refcount helpers"
            yield (
                member,
                (
                    f"[{arch}] is version-specific ({why}) but the wheel is tagged abi3: build it with "
                    "Py_LIMITED_API, or tag the wheel cpXY-cpXY"
                ),
            )


@rule("TW302")
def suffix_tag_mismatch(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    tags = _tags(w)
    if not tags:
        return
    for b in w.binaries:
        suffix = parse_suffix(b.member)
        if not _by_import(w, b, suffix.module):
            continue
        if suffix.kind == "cpython" and suffix.python is not None:
            want = f"cp{suffix.python.replace('.', '')}"
            abi = want + ("t" if suffix.free_threaded else "")
            if not any(t.interpreter == want and t.abi == abi for t in tags):
                listed = ", ".join(sorted(str(t) for t in tags))
                yield (
                    b.member,
                    (
                        f"loads only on CPython {suffix.python}{'t' if suffix.free_threaded else ''} but the wheel "
                        f"is tagged {listed}: tag it {want}-{abi}, or build it as .abi3"
                    ),
                )
        elif suffix.kind == "abi3t" and not any(t.abi == "abi3t" for t in tags):
            yield b.member, "is an .abi3t module but no wheel tag has the abi3t ABI: tag it cp315-abi3.abi3t"


@rule("TW303")
def limited_api_above_floor(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    floor = _abi3_floor(_tags(w))
    if floor is None:
        return
    installs_from = max(floor, _requires_python_floor(w) or floor)
    for member, arch, s in iter_slices(w):
        p = s.python
        if p.limited_floor is None or p.verdict.startswith("version-specific"):
            continue
        need = tuple(int(x) for x in p.limited_floor.split("."))
        if need > installs_from:
            yield (
                member,
                (
                    f"[{arch}] uses {', '.join(p.floor_symbols[:3])} (CPython {p.limited_floor}+) but the wheel is "
                    f"tagged cp{floor[0]}{floor[1]}-abi3: raise the tag to cp{need[0]}{need[1]}-abi3 (`torchwheel tag` "
                    "raises it)"
                ),
            )


@rule("TW304")
def module_hook_missing(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for b in w.binaries:
        suffix = parse_suffix(b.member)
        if suffix.kind not in ("cpython", "abi3", "abi3t") or suffix.module is None:
            continue
        if not _by_import(w, b, suffix.module):
            continue
        if b.analysis.kind != "extension-module" and all(
            s.python.verdict == "not-python" for s in b.analysis.slices
        ):
            name = module_name(b.member, suffix.module)
            loader = "torch.ops.load_library" if b.analysis.kind == "torch-op-library" else "ctypes.CDLL"
            yield (
                b.member,
                (
                    f"is imported as {name!r} by the wheel's Python code but is a {b.analysis.kind.replace('-', ' ')} "
                    f"without PyInit_{suffix.module}: import would fail; load it with {loader}(path) "
                    "instead, or build it as a module"
                ),
            )
            continue
        wanted = {f"PyInit_{suffix.module}", f"PyModExport_{suffix.module}"}
        for s in b.analysis.slices:
            hooks = s.python.hooks
            if not wanted & set(hooks):
                found = ", ".join(hooks[:_NAMED]) + (
                    f" and {len(hooks) - _NAMED:,} more" if len(hooks) > _NAMED else ""
                )
                yield (
                    b.member,
                    (
                        f"[{s.facts.arch}] named as module {suffix.module!r} but exports no PyInit_{suffix.module} "
                        f"(hooks: {found or 'none'}): import would fail; rename the file or the module"
                    ),
                )


@rule("TW305")
def abi3t_needs_modexport(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    tags = _tags(w)
    if not any(t.abi == "abi3t" for t in tags):
        return
    # tag drops abi3t where another ABI tag remains (cp315-abi3.abi3t), never the only one
    drops = " (`torchwheel tag` drops it)" if any(t.abi != "abi3t" for t in tags) else ""
    for member, arch, s in iter_slices(w):
        hooks = s.python.hooks
        if hooks and not any(h.startswith("PyModExport") for h in hooks):
            yield (
                member,
                (
                    f"[{arch}] exports only PyInit_ hooks, which free-threaded abi3t cannot use: "
                    f"port to PyModExport_ (PEP 793) or drop the abi3t tag{drops}"
                ),
            )


@rule("TW306")
def pure_tag_with_binaries(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    tags = _tags(w)
    if tags and all(t.abi == "none" for t in tags) and any(s.python.hooks for _, _, s in iter_slices(w)):
        yield (
            "",
            "ships Python extension modules but its tags say abi 'none': tag it with the modules' ABI (abi3 or cpXY)",
        )
