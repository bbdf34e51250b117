"""Hosted wheels: which ones to download, and downloading them (hash-checked).

A candidate's torch need is in ``WHEEL`` (``Torch-ABI``, ``Torch-ABI-Builds``), and no index
serves ``WHEEL`` on its own: PEP 658/714 serve ``METADATA`` only (``{file}.metadata``), and a
``Torch-ABI`` field in METADATA is refused by PyPI and twine. So a hosted wheel is judged in
three steps, each only as far as the answer needs:

1. the index page alone: yanked, the file name's tags, ``data-requires-python``;
2. its ``.metadata`` file, when the page offers one: ``Requires-Python`` and the wheel's own
   ``Requires-Dist: torch`` (``verdicts.requirement_excludes``, the half of the one verdict
   that METADATA holds). A tagged wheel's requirement already says its floor or its one minor
   (``tag`` writes ``torch>=2.12`` or ``torch==2.13.*``), so most builds for another torch
   stop here without a download;
3. the wheel itself, downloaded and checked against the page's digests, for the rest.

For a target (``select``, ``install``) the files are walked in the order ``choose`` ranks
them (the highest version, local label included, then the tags in the target's order): once
a rank group holds a wheel that fits, every file ranked after it cannot be the choice and is
not downloaded. Pre-releases held back (``choose.holds_back_pre``: a final release has a file
for the target, and no ``--pre``) are not downloaded either. The choice is then the one a
full download would give. ``matrix`` and ``index`` show or
republish every wheel, so they download all of them (each once).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from email.parser import HeaderParser
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.limits import current
from torchwheel.net import fetch, pages
from torchwheel.selection.candidates import Candidate, Gathered, Skipped, read_candidate
from torchwheel.selection.choose import HELD_BACK, holds_back_pre, judge, tag_order, tag_rank, tag_reason
from torchwheel.selection.target import TorchTarget
from torchwheel.tables.tableset import Tables, shipped_tables
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.verdicts import requirement_excludes
from torchwheel.wheel.contents import WheelName, parse_filename
from torchwheel.wheel.metadata import parse_metadata


@frozen
class HostedFile:
    link: pages.Link
    origin: str  # the page that lists it, as messages show it

    @property
    def where(self) -> str:
        return fetch.shown(self.link.url)


@frozen
class _Listed:
    file: HostedFile
    wheel: WheelName
    rank: int

    @property
    def key(self) -> tuple[Version, int]:
        return self.wheel.version, self.rank


def _python_excludes(spec: str | None, target: TorchTarget, source: str) -> str:
    """Why ``spec`` excludes the target's Python ("" when it does not or cannot say);
    ``spec`` is within the requires-python limits (``pages.requires_python``) already."""
    if not spec:
        return ""
    try:
        found = SpecifierSet(spec)
    except InvalidSpecifier:
        return ""  # judged again from the wheel's own METADATA, where it is a finding
    if found.contains(target.python_version, prereleases=True):
        return ""
    return f"Requires-Python {found} excludes Python {target.python_version} ({source})"


def _torch_excludes(text: str, target: TorchTarget, tables: Tables) -> str:
    """What the wheel's ``Requires-Dist: torch`` says about the target's torch, from its
    METADATA alone: the reason it is excluded, or "" when only the wheel can tell."""
    reqs = parse_metadata(text).torch_requirements
    if target.torch is None or not reqs:
        return ""
    torches = (
        tables.releases.releases_of(torch_releases.minor_of(target.torch))
        if target.torch_minor_only
        else (target.torch,)
    )
    reasons = [requirement_excludes(reqs, target.markers, t) for t in torches]
    return reasons[-1] if all(reasons) else ""


class _Fetcher:
    def __init__(
        self,
        session: fetch.Session,
        scratch: Path,
        verify_hashes: bool,
        out: Gathered,
        tables: Tables | None = None,
    ) -> None:
        self.session, self.scratch, self.verify_hashes, self.out = session, scratch, verify_hashes, out
        self.tables = tables if tables is not None else shipped_tables()
        self.count = 0

    def skip(self, f: HostedFile, reason: str, name: NormalizedName | None) -> None:
        self.out.skipped.append(Skipped(f.where, reason, name))

    def metadata(self, listed: _Listed, target: TorchTarget) -> str | None:
        """Why the ``.metadata`` file rules the wheel out ("" when it does not, or the page
        offers none); None when that file is broken (reported as skipped)."""
        f, link = listed.file, listed.file.link
        if link.metadata is None:
            return ""
        url = link.url + ".metadata"
        try:
            body = self.session.get(url, current().max_metadata_bytes).body
        except fetch.NotFound:
            return ""  # offered but absent: the wheel itself tells (pip does the same)
        except fetch.Exhausted:
            raise  # the command's budget, not this file's problem
        except InputError as exc:
            self.skip(f, f"its .metadata file: {exc}", listed.wheel.name)
            return None
        for algo, want in link.metadata.items():
            if algo in hashlib.algorithms_guaranteed and hashlib.new(algo, body).hexdigest() != want:
                self.skip(f, f"its .metadata file's {algo} differs from the page's", listed.wheel.name)
                return None
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return ""  # the wheel's own METADATA is judged after download
        try:
            spec = pages.requires_python(
                HeaderParser().parsestr(text).get("Requires-Python"), "its .metadata file"
            )
        except InputError as exc:
            self.skip(f, str(exc), listed.wheel.name)
            return None
        return _python_excludes(spec, target, "its .metadata") or _torch_excludes(text, target, self.tables)

    def download(self, f: HostedFile, name: NormalizedName | None) -> Candidate | None:
        # a folder per wheel kept (two pages may list one file name), reused after a failed
        # download: 2,000 links that answer 404 make one folder, not 2,000
        folder = self.scratch / str(self.count + 1)
        folder.mkdir(exist_ok=True)
        dest = folder / f.link.filename
        try:
            self.session.download(f.link.url, dest, f.link.hashes, f.link.size)
            # the download checked the page's digests as it came: its sha256 is known
            known = f.link.hashes.get("sha256", "")
            cand = read_candidate(dest, f.origin, self.verify_hashes, self.tables, sha256=known)
        except fetch.Exhausted:
            raise
        except (InputError, InvalidVersion, ValueError) as exc:
            dest.unlink(missing_ok=True)
            self.skip(f, str(exc), name)
            return None
        self.count += 1
        return dataclasses.replace(cand, url=f.where)


def _listed(files: list[HostedFile], out: Gathered) -> Iterator[tuple[HostedFile, WheelName]]:
    seen: set[str] = set()
    for f in files:
        if f.link.url in seen:  # the same file on two pages (per-torch indexes share files/)
            continue
        seen.add(f.link.url)
        try:
            yield f, parse_filename(f.link.filename)
        except (InputError, InvalidVersion, ValueError) as exc:
            out.skipped.append(Skipped(f.where, str(exc)))


def _after(key: tuple[Version, int], best: tuple[Version, int]) -> str:
    """Why a file ranked at ``key`` cannot beat a fitting one at ``best`` ("" if it can)."""
    if key[0] < best[0]:
        what = (
            "release" if key[0].public != best[0].public else "version (PEP 440 ranks the local label higher)"
        )
        return f"not downloaded: {best[0]} is a newer {what} that fits"
    if key[0] == best[0] and key[1] > best[1]:
        return "not downloaded: a fitting file of this release has tags the target ranks first"
    return ""


def fetch_all(
    files: list[HostedFile],
    local: list[Candidate],
    target: TorchTarget | None,
    session: fetch.Session,
    scratch: Path,
    verify_hashes: bool,
    out: Gathered,
    tables: Tables | None = None,
    *,
    pre: bool = False,
) -> list[Candidate]:
    """The hosted wheels as candidates: every one without a target, else only those that can
    still be chosen beside ``local`` (read already); the rest go to ``out.unopened``."""
    fetcher = _Fetcher(session, scratch, verify_hashes, out, tables)
    listed = list(_listed(files, out))
    if target is None:
        return [c for f, w in listed if (c := fetcher.download(f, w.name)) is not None]
    order = tag_order(target)
    by_name: dict[NormalizedName, list[_Listed]] = {}
    for f, w in listed:
        rank = tag_rank(w, order)
        why = tag_reason(w, target) if rank is None else ""
        why = why or _python_excludes(f.link.requires_python, target, "the index page")
        if why:
            out.unopened.append(Skipped(f.where, why, w.name))
        else:
            by_name.setdefault(w.name, []).append(_Listed(f, w, rank or 0))
    got: list[Candidate] = []
    for name, items in by_name.items():
        mine = [c for c in local if c.name == name]
        held = holds_back_pre([*mine, *(i.wheel for i in items)], order, pre)
        for item in [i for i in items if held and i.wheel.version.is_prerelease]:
            out.unopened.append(Skipped(item.file.where, f"not downloaded: {HELD_BACK}", name))
        items = [i for i in items if not (held and i.wheel.version.is_prerelease)]
        fits = [
            c
            for c in mine
            if judge(c, target, order).verdict.loads and not (held and c.version.is_prerelease)
        ]
        keys = [(c.version, tag_rank(c, order) or 0) for c in fits]
        best = max(keys, key=lambda k: (k[0], -k[1])) if keys else None
        got += _walk(items, best, target, fetcher)
    return got


def _walk(
    items: list[_Listed], best: tuple[Version, int] | None, target: TorchTarget, fetcher: _Fetcher
) -> Iterator[Candidate]:
    """One project's hosted files in ``choose``'s order, downloaded until a rank group holds
    a fit (``best``: the best-ranked fit so far, local ones included)."""
    order = tag_order(target)
    items.sort(key=lambda i: (i.key[0], -i.key[1]), reverse=True)
    for item in items:
        passed = _after(item.key, best) if best is not None else ""
        found = passed or fetcher.metadata(item, target)
        if found:
            fetcher.out.unopened.append(Skipped(item.file.where, found, item.wheel.name))
        if found is None or found:
            continue
        cand = fetcher.download(item.file, item.wheel.name)
        if cand is None:
            continue
        yield cand
        if judge(cand, target, order).verdict.loads and (best is None or _after(best, item.key)):
            best = item.key
