"""``torchwheel index``: a PEP 503 simple index plus one sub-index per torch target.

pip and uv choose among the files of a release by wheel tags only, so the way to make them
pick the build that loads on a user's torch today is the one PyTorch uses for CUDA: one
index URL per target (``torch-2.12/simple/``) listing only the files that load there. Each
link carries the PEP 503 ``#sha256=`` and ``data-requires-python``, and the PEP 658/714
``data-core-metadata`` / ``data-dist-info-metadata`` pointing at a ``{file}.metadata`` copy
of METADATA, so resolvers need not download wheels to resolve.

A sub-index keeps, per release and tag set, only the best wheel that loads on its torch
(``choose.preference``): pip's own tie-break among files with equal tags is the build
number, which says nothing about torch targets.

Everything is read from metadata (``candidates``: WHEEL ``Torch-ABI``); an untagged wheel
falls back to its binaries once and is reported. Output is built in a temp directory next
to ``OUT`` and renamed into place, so a reader never sees half an index.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from packaging.version import Version

from torchwheel import __version__, safejson
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.limits import current
from torchwheel.publish import front_page
from torchwheel.report.textsafe import html_text
from torchwheel.selection.candidates import Candidate, Gathered
from torchwheel.selection.choose import fit, preference
from torchwheel.selection.discovery import gathering
from torchwheel.tables.tableset import Tables, shipped_tables
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild
from torchwheel.torchabi.torch_releases import Minor, show_minor
from torchwheel.wheel import variant_json
from torchwheel.wheel.archive import WheelArchive

if TYPE_CHECKING:
    from torchwheel.analysis.wheelfacts import WheelFacts

# ``check``'s rules over the wheels, handed down by the command line (publish does not import them)
Judge = Callable[[list["WheelFacts"]], Iterable[front_page.PageFinding]]

MARKER = ".torchwheel-index"  # identifies a directory this command wrote (and may replace)
FILES = "files"
CONSTRAINTS = "constraints.txt"  # beside each torch-X.Y[-backend]/simple/


@frozen
class Entry:
    cand: Candidate
    metadata: bytes  # METADATA, served as ``{file}.metadata`` (PEP 658)
    variant: dict[str, object] | None  # .dist-info/variant.json of a variant wheel


@frozen
class Note:
    """Something ``index`` tells beside what it wrote, about ``items`` (file, what of it): a
    note on 3,000 untagged wheels is one line (``summary``, which counts them) unless each is
    asked for (``index -v``). ``warning``: what is published is not what the user may think
    (a wheel ``check`` calls broken still listed by torch, variant wheels left out): said under
    ``index -q`` too."""

    summary: str
    items: tuple[tuple[str, str], ...]
    warning: bool = False


def _note(items: Sequence[tuple[str, str]], many: str, warning: bool = False) -> list[Note]:
    """One note on ``items``, or none; ``many``: its line for several, ``{n}`` their count."""
    if not items:
        return []
    return [
        Note(
            f"{items[0][0]}: {items[0][1]}" if len(items) == 1 else many.format(n=len(items)),
            tuple(items),
            warning,
        )
    ]


@dataclass
class IndexResult:
    out: Path
    entries: list[Entry]
    targets: dict[Minor, list[Entry]]
    backend_targets: dict[tuple[Minor, str], list[Entry]] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    variants_files: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # the wheels ``check`` calls broken


def read_entry(c: Candidate) -> Entry:
    """METADATA as the candidate was read with it (``verify_hashes``: no second open), and a
    variant wheel's variant.json through the one wheel reader (central directory only)."""
    meta = c.metadata
    current().max_metadata_bytes.check(f"{c.filename}: METADATA bytes", len(meta))
    doc = None
    if c.variant is not None:
        with WheelArchive(c.path) as archive:
            name = f"{archive.contents.dist_info}/{variant_json.DIST_INFO_FILE}"
            if name not in archive.infos:
                raise InputError(
                    f"{c.filename}: a variant file name without .dist-info/variant.json",
                    reference="wheel-invalid",
                )
            current().max_metadata_bytes.check(f"{c.filename}: variant.json bytes", archive.member_size(name))
            doc = variant_json.read_variant_json(archive.read(name), c.filename)
    return Entry(c, meta, doc)


def index_entries(got: Gathered) -> tuple[list[Entry], list[Note]]:
    """Every wheel gathered (``discovery.gathering(..., verify_hashes=True)``); an unreadable
    or broken one stops the index (exit 2): publishing a corrupt file or silently leaving one
    out are both worse than saying so. Broken is what ``check`` calls broken in the archive:
    the defects ``check`` reports as TW4xx errors (``wheel.defects``), every member hashed
    against RECORD."""
    if got.skipped:
        first = got.skipped[0]
        raise InputError(f"{first.location}: {first.reason}", reference="candidates-unusable")
    by_name: dict[str, Candidate] = {}
    for c in got.candidates:
        other = by_name.get(c.filename)
        if other is not None:
            raise InputError(
                f"{c.filename}: two different files of this name ({other.path}, {c.path}); "
                "an index serves one file per name (give one a build tag or local label)",
                reference="misuse",
            )
        by_name[c.filename] = c
    untagged = [
        (c.filename, f"untagged, its torch need ({c.torch}) was read from its binaries; {_TAG}")
        for c in got.candidates
        if not c.torch.source.startswith("WHEEL")
    ]
    undated = [
        (c.filename, f"unstable build whose torch minor is unknown: in no per-torch index ({_BUILD_TORCH})")
        for c in got.candidates
        if c.torch.kind == "unstable" and not c.torch.releases
    ]
    unopened = [(s.location, f"{s.reason}: not indexed") for s in got.unopened]
    notes = [
        *_note(untagged, f"{{n}} untagged wheels: their torch need was read from their binaries; {_TAG}"),
        *_note(
            undated,
            f"{{n}} unstable builds whose torch minor is unknown: in no per-torch index ({_BUILD_TORCH})",
        ),
        *_note(unopened, "{n} files not indexed (yanked, or passed over on what their index page says)"),
    ]
    return [read_entry(c) for c in got.candidates], notes


_TAG = "run `torchwheel tag` so installers and this index read it from WHEEL"
_BUILD_TORCH = "tag it with --build-torch X.Y, or --build-torch installed where it was built"


def plan_targets(
    entries: list[Entry], extra: Iterable[Minor], build: TorchBuild | None, tables: Tables
) -> dict[Minor, list[Entry]]:
    """Torch minor -> the best loading entry per (project, public version, tag set, variant
    label): every minor of ``tables`` some wheel loads on (``choose.fit``, the verdict ``select``
    gives), and ``extra``. ``build``: for that torch build's index (``torch-2.13-cu130``);
    None for the build-agnostic one (``torch-2.13``), which lists only wheels that load on
    every build (a CUDA wheel there would reach a CPU torch)."""
    out: dict[Minor, list[Entry]] = {}
    extra = set(extra)
    for torch in sorted(set(tables.releases.known_minors()) | extra):
        best: dict[tuple[object, ...], Entry] = {}
        for e in entries:
            if build is None and e.cand.torch.builds != ANY_BUILD:
                continue
            if not fit(e.cand, torch, build).loads:
                continue
            c = e.cand
            # variant wheels stay one per label: the installer's plugin chooses among them
            key: tuple[object, ...] = (c.name, c.version.public, tuple(sorted(map(str, c.tags))), c.variant)
            held = best.get(key)
            if held is None or _rank(e) > _rank(held):
                best[key] = e
        if best or torch in extra:
            out[torch] = sorted(best.values(), key=lambda e: e.cand.filename)
    return out


def _rank(e: Entry) -> tuple[object, ...]:
    return (preference(e.cand.torch), e.cand.version, e.cand.build)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _page(title: str, body: list[str]) -> str:
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        '<meta name="pypi:repository-version" content="1.0">\n'
        f"<title>{html_text(title)}</title>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def _link(e: Entry, up: str) -> str:
    c = e.cand
    attrs = [f'href="{up}{FILES}/{quote(c.filename)}#sha256={c.sha256}"']
    if c.requires_python is not None:
        attrs.append(f'data-requires-python="{html_text(str(c.requires_python))}"')
    digest = f"sha256={_sha(e.metadata)}"
    attrs += [f'data-dist-info-metadata="{digest}"', f'data-core-metadata="{digest}"']
    return f"<a {' '.join(attrs)}>{html_text(c.filename)}</a><br>"


def _write_simple(
    root: Path, entries: list[Entry], up: str, variants_files: dict[tuple[str, str], tuple[str, str]]
) -> None:
    """``root/index.html`` and one page per project; ``up`` leads from a project page to OUT."""
    projects: dict[str, list[Entry]] = {}
    for e in entries:
        projects.setdefault(e.cand.name, []).append(e)
    root.mkdir(parents=True, exist_ok=True)
    names = sorted(projects)
    body = [f'<a href="{quote(n)}/">{html_text(n)}</a><br>' for n in names]
    (root / "index.html").write_text(_page("Simple index", body), "utf-8")
    for name in names:
        links = [_link(e, up) for e in sorted(projects[name], key=lambda e: e.cand.filename)]
        releases = {(name, str(e.cand.version)) for e in projects[name] if e.variant is not None}
        for key in sorted(releases):
            vfile, digest = variants_files[key]
            links.append(f'<a href="{up}{FILES}/{quote(vfile)}#sha256={digest}">{html_text(vfile)}</a><br>')
        (root / name).mkdir()
        (root / name / "index.html").write_text(_page(f"Links for {name}", links), "utf-8")


def constraints(entries: list[Entry], listed: list[Entry], torch: Minor) -> str:
    """``torch-X.Y/constraints.txt``: for pip/uv beside a registry that also holds the
    projects (docs/installers.md): each project pinned to the newest release this per-torch
    index lists (its exact version, or its public version when it lists several local
    labels of it), and a project it lists nothing of to no version at all (``<0``), so that
    the registry's newer or other build can never be taken instead."""
    lines = [f"# torchwheel index: what loads on torch {show_minor(torch)} (pip/uv -c; docs/installers.md)"]
    for name in sorted({e.cand.name for e in entries}):
        mine = [e.cand.version for e in listed if e.cand.name == name]
        if not mine:
            lines.append(f"{name}<0  # no build of {name} loads on torch {show_minor(torch)}")
            continue
        newest = max(Version(v.public) for v in mine)
        exact = {v for v in mine if Version(v.public) == newest}
        lines.append(f"{name}=={exact.pop() if len(exact) == 1 else newest}")
    return "\n".join(lines) + "\n"


def _copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)  # same filesystem: no copy; the index never writes into its files
    except OSError:
        shutil.copyfile(src, dst)


def write(
    entries: list[Entry],
    targets: dict[Minor, list[Entry]],
    out: Path,
    backend_targets: dict[tuple[Minor, str], list[Entry]] | None = None,
    front: str = "",
    variants: dict[tuple[str, str], bytes] | None = None,
) -> list[str]:
    """Build the whole tree in a temp dir beside ``out``, then swap it in; ``front``: the front
    page for people (``front_page``), ``OUT/index.html`` beside ``simple/``; ``variants``: the
    ``{name}-{version}-variants.json`` of each release that has variant wheels
    (``variant_files``)."""
    if out.is_symlink():
        raise InputError(
            f"{out}: a symbolic link: index writes a folder of its own there, never through a link",
            reference="output-refused",
        )
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).is_file())):
        raise InputError(
            f"{out}: exists and is not an index torchwheel wrote; choose an empty or new directory",
            reference="output-refused",
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        files = tmp / FILES
        files.mkdir()
        for e in entries:
            _copy(e.cand.path, files / e.cand.filename)
            (files / f"{e.cand.filename}.metadata").write_bytes(e.metadata)
        variants_files: dict[tuple[str, str], tuple[str, str]] = {}
        for (name, version), data in (variants or {}).items():
            vfile = variant_json.index_file_name(name, version)
            (files / vfile).write_bytes(data)
            variants_files[(name, version)] = (vfile, _sha(data))
        _write_simple(tmp / "simple", entries, "../../", variants_files)
        for (torch, name), chosen in (backend_targets or {}).items():
            page = tmp / f"torch-{show_minor(torch)}-{name}" / "simple"
            _write_simple(page, chosen, "../../../", variants_files)
            (page.parent / CONSTRAINTS).write_text(constraints(entries, chosen, torch), "utf-8")
        for torch, chosen in targets.items():
            _write_simple(tmp / f"torch-{show_minor(torch)}" / "simple", chosen, "../../../", variants_files)
            (tmp / f"torch-{show_minor(torch)}" / CONSTRAINTS).write_text(
                constraints(entries, chosen, torch), "utf-8"
            )
        if front:
            (tmp / "index.html").write_text(front, "utf-8")
        (tmp / MARKER).write_text(f"torchwheel {__version__}\n", "utf-8")
        tmp.chmod(0o755)
        _swap(tmp, out)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a write error names no file
            raise OSError(
                exc.errno, f"{exc.strerror or exc} (writing the index, through {tmp.name})", str(out)
            ) from exc
        raise
    return sorted(v for v, _ in variants_files.values())


def variant_files(entries: list[Entry]) -> tuple[list[Entry], dict[tuple[str, str], bytes], list[Note]]:
    """(the entries to publish, each variant release's ``variants.json``, notes). A release
    whose variant metadata uv 0.13.9 cannot parse (``variant_json.installer_problem``: one
    wheel's own ``variant.json``, or their union), or whose wheels contradict each other, is
    published without its variant wheels and without a ``variants.json``: uv's preview fails
    the whole install over a file it cannot parse, and without one it takes the plain wheel,
    as pip always does."""
    releases: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in entries:
        if e.variant is not None:
            releases.setdefault((e.cand.name, str(e.cand.version)), []).append(e.variant)
    files: dict[tuple[str, str], bytes] = {}
    notes: list[Note] = []
    for (name, version), docs in releases.items():
        vfile = variant_json.index_file_name(name, version)
        problem = next(filter(None, map(variant_json.installer_problem, docs)), None)
        try:
            data = variant_json.encode_variant_json(variant_json.merge_variant_files(docs))
            doc = safejson.load(
                data, vfile, variant_json.SHAPE, reference="wheel-invalid"
            )  # what installers will read: read back first
        except InputError as exc:
            problem = problem or str(exc)
        else:
            problem = problem or variant_json.installer_problem(doc)
        if problem is None:
            files[(name, version)] = data
        else:
            why = (
                f"not written and the variant wheels of {name} {version} not listed ({problem}): uv "
                "refuses a whole install over a variants.json it cannot parse; without one, installers "
                "take the plain wheel"
            )
            notes.append(Note(f"{vfile}: {why}", ((vfile, why),), warning=True))
    dropped = {key for key in releases if key not in files}
    kept = [e for e in entries if e.variant is None or (e.cand.name, str(e.cand.version)) not in dropped]
    return kept, files, notes


def _swap(tmp: Path, out: Path) -> None:
    """Rename the new tree onto ``out``; an old index is moved aside first and removed last."""
    if not out.exists():
        os.replace(tmp, out)
        return
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        os.replace(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_indexes(
    sources: Iterable[str],
    out: Path,
    extra: Iterable[Minor] = (),
    names: Iterable[str] = (),
    tables: Tables | None = None,
    base_url: str | None = None,
    indexes: Iterable[str] = (),
    judge: Judge | None = None,
) -> IndexResult:
    """Sources may be hosted (every wheel is downloaded, hash-checked, and republished);
    ``tables``: the tables every wheel is read and judged with (``--symbols``; None: the
    shipped ones); ``base_url``:
    where OUT is served, for the front page's install lines; ``indexes``: index roots
    (``-i``), read as ``discovery.gather`` reads them; ``judge``: ``check``'s rules, whose
    findings the front page shows per wheel (a wheel with an error: marked broken, offered
    for no install there)."""
    tables = tables if tables is not None else shipped_tables()
    with gathering(sources, names, indexes=indexes, verify_hashes=True, tables=tables) as got:
        entries, notes = index_entries(got)
        if not entries:
            raise InputError("no wheels to index", reference="not-found")
        entries, variants, dropped = variant_files(entries)
        if not entries:
            raise InputError(
                f"no wheels to index: {dropped[0].items[0][0]}: {dropped[0].items[0][1]}",
                reference="not-found",
            )
        notes += dropped
        findings = _judged([e.cand for e in entries], judge)
        bad = sorted(f for f, found in findings.items() if front_page.broken(found))
        codes = ", ".join(
            sorted({x.code for f in bad for x in findings[f] if x.severity == front_page.BROKEN})
        )
        notes += _note(
            [
                (
                    f,
                    f"`torchwheel check` calls it broken ({codes}): index.html marks it, offered for no install; {_STILL}",
                )
                for f in bad
            ],
            f"{{n}} wheels `torchwheel check` calls broken ({codes}): index.html marks them, offered for no install; {_STILL}",
            warning=True,
        )
        extra = set(extra)
        targets = plan_targets(entries, extra, None, tables)
        per_backend: dict[tuple[Minor, str], list[Entry]] = {}
        for b in tables.backends.representative_backends(e.cand.torch.builds for e in entries):
            for torch, chosen in plan_targets(entries, extra, b, tables).items():
                if chosen:
                    per_backend[(torch, b.backend)] = chosen
        notes += left_out(entries, targets, per_backend, tables)
        front = front_page.page([e.cand for e in entries], extra, base_url, findings, tables=tables)
        vfiles = write(entries, targets, out, per_backend, front, variants)
    return IndexResult(out, entries, targets, per_backend, notes, vfiles, bad)


def left_out(
    entries: list[Entry],
    targets: dict[Minor, list[Entry]],
    per_backend: dict[tuple[Minor, str], list[Entry]],
    tables: Tables,
) -> list[Note]:
    """A note on every wheel no per-torch index lists, with why (the verdict on the newest
    torch the tables know): it is in the root index only, and no installer pointed at a
    per-torch index is offered it (a module imported without its hook, a build no torch of
    the tables loads). One line for several (``index -v`` names each)."""
    listed = {e.cand.filename for chosen in (*targets.values(), *per_backend.values()) for e in chosen}
    newest = max(tables.releases.known_minors())
    items = []
    for e in entries:
        if e.cand.filename in listed or (e.cand.torch.kind == "unstable" and not e.cand.torch.releases):
            continue  # the unknown minor has its own note
        builds = [None, *tables.backends.representative_backends([e.cand.torch.builds])]
        why = next((v.reason for b in builds if not (v := fit(e.cand, newest, b)).loads), "")
        items.append((e.cand.filename, f"in no per-torch index ({why or 'outranked on every torch'})"))
    reasons = {what for _, what in items}
    same = reasons.pop() if len(reasons) == 1 else "in no per-torch index, each for its own reason"
    return _note(items, f"{{n}} wheels {same}")


_STILL = "the per-torch indexes list by torch alone (`torchwheel check` says what to fix)"


def _judged(cands: list[Candidate], judge: Judge | None) -> dict[str, list[front_page.PageFinding]]:
    """File name -> ``check``'s findings on it, over every wheel at once (the release rules
    judge the wheels of one release together, as ``check DIR`` does)."""
    if judge is None:
        return {}
    read = [(c.facts, c.filename) for c in cands if c.facts is not None]  # all: read_candidate keeps them
    names = {w.contents.path: filename for w, filename in read}
    out: dict[str, list[front_page.PageFinding]] = {c.filename: [] for c in cands}
    for f in judge([w for w, _ in read]):
        out[names[f.wheel]].append(f)
    return out
