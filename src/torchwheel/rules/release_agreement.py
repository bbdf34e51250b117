"""TW6xx: the wheels of one release (same name and version) must agree with each other.

Installers assume one METADATA per release: uv resolves with the first wheel's and pip with
the one it downloads, so a macOS wheel that needs a newer torch than its Linux twin must say
so in the *shared* requirement (with an environment marker), not in its own copy. These rules
see a whole release at once: ``rules.run_all`` groups the wheels it is given by (name,
version), and for every release of two or more wheels calls each TW6xx check once per wheel
with a ``ReleaseView`` (the wheel and its siblings), so each finding lands on a wheel file.
A local version label (``1.0+torch2.12``) makes another release: that is the way out.
A hybrid release (a stable build beside per-minor builds for the minors below its floor:
``release_wheels.hybrid_of``) is no TW603 conflict; TW601 still says that one index cannot
serve it, and how to publish it.
"""

from __future__ import annotations

from collections.abc import Iterator

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.analysis.release_wheels import ReleaseView, hybrid_of, markers_can_tell
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.rules.registry import Hit, Policy, rule
from torchwheel.torchabi.need import show_release
from torchwheel.version import FeatureVersion


def _name(w: WheelFacts) -> str:
    return w.contents.path.replace("\\", "/").rsplit("/", 1)[-1]


def torch_requirement_set(w: WheelFacts) -> tuple[str, ...]:
    return tuple(sorted(str(r) for r in w.metadata.torch_requirements))


def _shown(reqs: tuple[str, ...]) -> str:
    return "; ".join(reqs) if reqs else "no torch requirement"


def _admits_floor(req: Requirement, floor: FeatureVersion | None) -> bool:
    return floor is None or req.specifier.contains(Version(floor.release), prereleases=True)


def _platforms(w: WheelFacts) -> str:
    return ".".join(sorted({t.platform for t in w.contents.filename_tags}))


@rule("TW601")
def release_requirements_differ(view: ReleaseView, policy: Policy) -> Iterator[Hit]:
    mine = torch_requirement_set(view.wheel)
    other = next((o for o in view.others if torch_requirement_set(o) != mine), None)
    if other is None:
        return
    differ = (
        f"requires {_shown(mine)} but {_name(other)} of the same release requires "
        f"{_shown(torch_requirement_set(other))}: installers read one METADATA per release"
    )
    hybrid = hybrid_of(view.release)
    if hybrid is None:
        yield (
            "",
            f"{differ}; write one set to all with `torchwheel tag --release` (markers where platforms differ)",
        )
        return
    own = sorted(view.wheel.torch_need.releases) if view.wheel.torch_need.kind == "unstable" else []
    first = show_release(own[0] if own else hybrid.releases[0])
    yield (
        "",
        f"{differ}, and this hybrid release ({hybrid.summary}) cannot be one: give each per-minor build "
        f"its local label (`torchwheel tag --build-torch {first} --local-label torch{first}`) and publish "
        "them with `torchwheel index`, whose per-torch indexes serve each torch its build (docs/installers.md, "
        "hybrid releases)",
    )


@rule("TW602")
def release_targets_differ(view: ReleaseView, policy: Policy) -> Iterator[Hit]:
    mine = view.wheel.torch_need
    if mine.kind != "stable" or any(r.marker is not None for r in view.wheel.metadata.torch_requirements):
        return
    for o in view.others:
        theirs = o.torch_need
        if theirs.kind == "stable" and theirs.floor != mine.floor and _platforms(o) != _platforms(view.wheel):
            lower, need = (view.wheel, mine) if mine.floor < theirs.floor else (o, theirs)  # type: ignore[operator]
            # tag only narrows: a requirement that already excludes the lower floor stays as it is
            tight = [str(r) for r in lower.metadata.torch_requirements if not _admits_floor(r, need.floor)]
            first = (
                f"loosen {'; '.join(tight)!r} to 'torch>={need.label}' in the project, then " if tight else ""
            )
            differ = (
                f"targets torch {mine.label} on {_platforms(view.wheel)} but {_name(o)} targets {theirs.label} on "
                f"{_platforms(o)}"
            )
            if markers_can_tell(view.wheel, o):
                fix = f"one requirement set must carry both floors with sys_platform markers; {first}`torchwheel tag --release` writes them"
            else:  # one platform family (or a platform-independent wheel): no marker tells them apart
                fix = (
                    "no environment marker tells these two apart: build both for one floor, or make one another "
                    "release with a local label (`torchwheel tag --local-label torchX.Y`) on its own index"
                )
            yield "", f"{differ}: {fix}"
            return


@rule("TW603")
def release_stable_and_unstable(view: ReleaseView, policy: Policy) -> Iterator[Hit]:
    mine = view.wheel.torch_need.kind
    if mine not in ("stable", "unstable"):
        return
    want = "unstable" if mine == "stable" else "stable"
    other = next((o for o in view.others if o.torch_need.kind == want), None)
    if other is not None and hybrid_of(view.release) is None:  # a hybrid's builds never meet
        yield (
            "",
            f"this wheel is {mine} but {_name(other)} of the same release is {want}: they cannot share "
            "one METADATA (a floor vs a one-minor pin); give the version-locked build a local label "
            "(`torchwheel tag --local-label torchX.Y`) or publish it on a per-target index",
        )
