"""TW2xx: the torch contract a library declares matches the symbols it imports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from fnmatch import fnmatch

from torchwheel.analysis.usage import TorchUsage
from torchwheel.analysis.wheelfacts import WheelFacts, iter_slices
from torchwheel.errors import quoted
from torchwheel.rules.marker import hex_hint, slice_targets
from torchwheel.rules.registry import Hit, Policy, hit, rule
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.cxxnames import demangle, names_text
from torchwheel.torchabi.need import show_release
from torchwheel.version import FeatureVersion


def _unknown_text(t: TorchUsage) -> str:
    return names_text(t.unknown_symbols, t.unknown_count)


def _whole(names: Sequence[str], count: int, shown: int = 3) -> str:
    """The ``detail`` of a finding whose message named ``shown`` of ``names``: all of them
    (demangled), and the count of those the facts did not keep; "" when the message said all."""
    if count <= shown:
        return ""
    more = count - len(names)
    return ", ".join(demangle(n) or n for n in names) + (f" and {more:,} more" if more > 0 else "")


def _allowlisted(member: str, policy: Policy) -> bool:
    return any(
        fnmatch(member, pattern) or fnmatch(member.rsplit("/", 1)[-1], pattern)
        for pattern in policy.unstable_allowlist
    )


@rule("TW201")
def target_too_old(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        d, t = s.declared, s.torch
        if d is None or d.record.version is None or t.min_version is None:
            continue
        if t.min_version > d.record.version:
            later = t.newer_than(d.record.version)
            newer = ", ".join(f"{n} ({v.minor_release})" for n, v in later[:3])
            newer += f" and {len(later) - 3} more" if len(later) > 3 else ""
            whole = ", ".join(f"{n} ({v.minor_release})" for n, v in later) if len(later) > 3 else ""
            yield hit(
                member,
                (
                    f"[{arch}] declares torch {d.record.version} but imports {newer or _unknown_text(t)}: "
                    f"on torch {d.record.version.minor_release} the import fails with 'undefined symbol'; "
                    f"set TORCH_TARGET_VERSION to {t.min_version.minor_release} or stop using them"
                ),
                whole or _whole(t.unknown_symbols, t.unknown_count),
            )


@rule("TW202")
def unstable_in_stable(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        if s.declared is not None and s.torch.unstable_count:
            sample = names_text(s.torch.unstable_symbols, s.torch.unstable_count, sep="; ")
            yield hit(
                member,
                (
                    f"[{arch}] declares the stable ABI but imports {s.torch.unstable_count} unstable "
                    f"libtorch symbols ({sample}): port them to torch::stable or the C shim, or drop the "
                    "marker and TORCH_TARGET_VERSION from this library and pin it "
                    "(`torchwheel tag --build-torch installed`)"
                ),
                _whole(s.torch.unstable_symbols, s.torch.unstable_count),
            )


@rule("TW203")
def unknown_shim(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        if s.torch.unknown_count:
            newest = s.torch.table_newest
            upto = f" up to {newest.minor_release}" if newest is not None else ""
            yield hit(
                member,
                (
                    f"[{arch}] imports shims no torch{upto} exports ({_unknown_text(s.torch)}): newer than this "
                    "torchwheel's tables, so it loads on no torch they know; run `torchwheel symbols update "
                    "TORCH_WHEEL_OR_ENV` with the torch it was built for"
                ),
                _whole(s.torch.unknown_symbols, s.torch.unknown_count),
            )


@rule("TW204")
def unstable_library(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    per_build = {member: build for a in w.alternatives for build, member in a.members}
    for member, arch, s in iter_slices(w):
        if s.torch.usage == "unstable" and s.declared is None and not _allowlisted(member, policy):
            build = per_build.get(member)
            loads = (
                f"this build loads only on torch {show_release(build)} (one of the wheel's per-minor builds)"
                if build is not None
                else "the wheel loads only on the torch it was built with"
            )
            yield (
                member,
                (
                    f"[{arch}] uses {s.torch.unstable_count} unstable libtorch symbols, so {loads}: "
                    "port to the stable ABI, or allowlist it in [tool.torchwheel] unstable-allowlist"
                ),
            )


@rule("TW205")
def stale_allowlist(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    unstable = [m for m, _, s in iter_slices(w) if s.torch.usage == "unstable"]
    for pattern in policy.unstable_allowlist:
        probe = Policy(unstable_allowlist=(pattern,))
        if not any(_allowlisted(m, probe) for m in unstable):
            yield (
                "",
                (
                    f"unstable-allowlist entry {pattern!r} matches no library that uses unstable symbols: "
                    "remove it from [tool.torchwheel]"
                ),
            )


@rule("TW206")
def target_above_need(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A "future" build: a marker newer than every import of the wheel needs (built against a
    newer torch's headers without ``TORCH_TARGET_VERSION``, whose default is that torch). The
    wheel's floor is the newest target, so it refuses torches it may well load on. Info, not
    warning: the need read from the symbols is a lower bound (inlined header code leaves no
    symbol), so only the author knows whether the older target builds."""
    found = list(iter_slices(w))
    if any(s.torch.usage == "unstable" or s.torch.unknown_count for _, _, s in found):
        return  # not a stable wheel, or shims newer than the table (TW203): the need is unknown
    needs = [s.torch.min_version for _, _, s in found if s.torch.min_version is not None]
    if not needs:
        return
    need = max(needs)
    newest = torch_releases.minor_of(w.tables.releases.newest())
    setters = sorted({n for _, _, s in found if s.torch.min_version == need for n in s.torch.pinning_symbols})
    by = f" ({', '.join(setters[:3])}{', ...' if len(setters) > 3 else ''})" if setters else ""
    target = FeatureVersion(need.major, need.minor)
    for member, arch, s in found:
        d = s.declared
        if d is None or d.record.version is None:
            continue
        v = d.record.version
        if len(slice_targets(s)) > 1:
            continue  # targets that disagree: which one is declared is arbitrary (TW104)
        if not torch_releases.minor_of(need) < torch_releases.minor_of(v) <= newest or v.major != need.major:
            continue  # no newer than the need, or no torch release at all (TW107)
        below = f"{v.major}.{v.minor - 1}"
        gap = target.minor_release if below == target.minor_release else f"{target.minor_release}-{below}"
        yield (
            member,
            (
                f"[{arch}] declares torch {v}, but the wheel's imports need only torch {target.minor_release}{by}: "
                f"the target makes the floor torch {v.minor_release} and keeps the wheel off torch {gap}; if the "
                f"code allows, rebuild with TORCH_TARGET_VERSION={target.to_int():#018x} (the symbols are a lower "
                "bound: inlined header code leaves none)"
            ),
        )


@rule("TW207")
def newer_than_tables(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A target, a requirement or unstable imports newer than the tables (shims: TW203):
    torchwheel cannot tell a torch released since from a mistake, so it says which it sees."""
    releases = w.tables.releases
    newest = releases.newest()
    update = (
        f"run `torchwheel symbols update TORCH_WHEEL_OR_ENV` with that torch (these tables end at {newest})"
    )
    for member, arch, s in iter_slices(w):
        d = s.declared
        if d is None or d.record.version is None or not releases.release_newer_than_tables(d.record.version):
            continue
        v = d.record.version
        hint = hex_hint(v, s.torch.min_version, releases)
        yield (
            member,
            f"[{arch}] declares torch {v} ({v.to_int():#018x}), newer than this torchwheel's tables: a torch "
            f"released since, or TORCH_TARGET_VERSION spelled in decimal digits (it is byte-packed hex){hint}; {update}",
        )
    for req in w.metadata.torch_requirements:
        if not releases.admitted(req.specifier) and releases.admits_future(req.specifier):
            yield (
                "",
                f"Requires-Dist {quoted(req)} admits only torch newer than this torchwheel's tables; {update}",
            )
    need = w.torch_need
    if need.kind == "unstable" and need.newer and need.tables is not None:
        shown = names_text(need.newer)
        yield hit(
            "",
            f"unstable imports no torch up to {show_release(need.tables)} exports ({shown}): built for a newer torch "
            f"(or they come from another library), so no torch the tables know loads it; {update}",
            _whole(need.newer, len(need.newer)),
        )
