"""The wheel-variant metadata files (PEP 817 / PEP 825 format / PEP 850 providers): DRAFT
standards, opt-in. Standard library only, like the provider plugin that shares its names.

``tag --variant`` writes ``*.dist-info/variant.json`` in the form variantlib 0.2.2 reads and
adds the variant label to the file name; the plain wheel stays beside it as the fallback
for installers without variant support (pip: none; uv: a preview). Two namespaces:

- ``torchwheel``, which this project owns (the ``torch`` name belongs to PyTorch), for a
  wheel any build of torch (or a CPU one) loads:
  ``torchwheel :: stable_abi :: 2.12``: a stable-ABI wheel loads on torch >= 2.12. The
  provider plugin (``publish.variant_plugin``) reports every known target <= the installed
  torch, newest first: the lower-bound pattern of NVIDIA's ``cuda_version_lower_bound``.
  ``torchwheel :: build_torch :: 2.13``: a version-locked (unstable) build loads on torch
  2.13 only; the plugin reports just the installed minor. Chosen over the reserved
  ``abi_dependency :: torch :: 2.13`` form, which means the same, because variantlib 0.2.2
  cannot read that back and uv 0.13.8 rejects it; switch when the tools do.
- ``nvidia``, NVIDIA's provider (``nvidia-variant-provider``), for a wheel that needs a CUDA
  build of torch: ``nvidia :: cuda_version_lower_bound :: 13`` (the CUDA major its runtime
  names: a driver of CUDA 13 or newer) and ``nvidia :: sm_arch :: 80_real, 90_real,
  120_virtual`` (a cubin per ``XY_real``, PTX per ``XY_virtual``: the values of the
  provider's ``get_all_configs``; compatible when one of them is supported). uv 0.13.9's
  variant preview evaluates this provider itself; it skips every third-party plugin and then
  every variant that uses one, so a CUDA variant carries the ``nvidia`` namespace alone and
  its torch floor stays where every installer reads it, ``Requires-Dist: torch``.

``{name}-{version}-variants.json`` next to the wheels is the union of their ``variant.json``
files (the index-level cache ``index`` writes).

``$schema`` is the PEP 850 draft's URL, one of the two uv 0.13.9 knows (it logs any other as
unknown; variantlib 0.2.2 reads any). And uv's preview fails the *whole* install on a
``variants.json`` it cannot parse ("twidx has invalid metadata"), where it falls back to the
plain wheel when there is none: so ``installer_problem`` holds a document to what uv 0.13.9
parses, and ``index`` publishes a release's variants only when it passes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from torchwheel import safejson
from torchwheel.errors import InputError, clipped
from torchwheel.safejson import Bool, List, Object, Str

NAMESPACE = "torchwheel"  # owned by this project; ``torch`` is PyTorch's name
STABLE = "stable_abi"  # torchwheel :: stable_abi :: 2.12 = loads on torch >= 2.12
LOCKED = "build_torch"  # torchwheel :: build_torch :: 2.13 = loads on torch 2.13 only
# the PEP 850 draft's format (PEP 825's, with the providers table this file has), as uv 0.13.9
# names it; variantlib 0.2.2 writes ``.../v0.2.0.json`` for the same shape and reads either
# (uv 0.13.9 knows it and PEP 825's ``.../peps/825/v0.1.1.json``, by ``strings`` of its binary;
# any other it logs as "Unknown variant metadata schema" and parses the same)
SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
PLUGIN_API = "torchwheel.publish.variant_plugin:TorchABIPlugin"
NVIDIA = "nvidia"  # NVIDIA's provider: uv 0.13.9 knows it by this plugin and package
CUDA_LOWER = "cuda_version_lower_bound"
SM_ARCH = "sm_arch"
NVIDIA_PROVIDER = {
    "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
    "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
}
DIST_INFO_FILE = "variant.json"
_VALUE = re.compile(r"[a-z0-9_.]+")

# The shape variantlib 0.2.2 reads (``models/variant_info.py``: it refuses unknown keys at
# every level), for ``variant.json`` (one variant) and ``{name}-{version}-variants.json``.
_NS, _FEATURE, _LABEL = r"[a-z0-9_]+", r"[a-z0-9_]+", r"[0-9a-z._]+"
_VALUES = List(Str(_VALUE.pattern), min_items=1)
_PROVIDER = Object(
    {
        "requires": List(Str(r"[\S ]+"), min_items=1),
        "optional": Bool(),
        "plugin-api": Str(r"[\w.]+(?:\s*:\s*[\w.]+)?"),
        "static-properties": Object(other=_VALUES, keys=_FEATURE),
        "feature-order": List(Str(_FEATURE), min_items=1),
        "builtin": Str(),
    }
)
SHAPE = Object(
    {
        "$schema": Str(),
        "default-priorities": Object({"namespace": List(Str(_NS))}),
        "providers": Object(other=_PROVIDER, keys=_NS),
        # label -> namespace -> feature -> values
        "variants": Object(other=Object(other=Object(other=_VALUES, keys=_FEATURE), keys=_NS), keys=_LABEL),
    },
    required=("variants",),
)


def property_of(kind: str, value: str) -> tuple[str, str]:
    """(feature, value) for a wheel's torch need: a stable floor or an unstable build minor."""
    if kind not in ("stable", "unstable"):
        raise InputError(
            "--variant: the wheel uses no torch symbols, there is no torch property to label",
            reference="rewrite-refused",
        )
    if not _VALUE.fullmatch(value):
        raise InputError(f"variant value {value!r} must match [a-z0-9_.]+", reference="wheel-invalid")
    if kind == "stable":
        return STABLE, value
    return LOCKED, value


def label(feature: str, value: str) -> str:
    """Readable and within the label rules: ``torch2.12`` (stable floor), ``torch2.13only``."""
    return f"torch{value}" + ("only" if feature == LOCKED else "")


def providers() -> dict[str, Any]:
    return {NAMESPACE: {"requires": ["torchwheel"], "plugin-api": PLUGIN_API}}


def document(feature: str, value: str) -> dict[str, Any]:
    """The ``variant.json`` of one wheel: one label, one single-valued torchwheel property."""
    return {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": [NAMESPACE]},
        "providers": providers(),
        "variants": {label(feature, value): {NAMESPACE: {feature: [value]}}},
    }


def nvidia_document(cuda_major: int | None, sm_archs: list[str]) -> tuple[str, dict[str, Any]]:
    """(label, ``variant.json``) of a wheel that needs a CUDA build: ``cu13``, or ``cuda``
    when no major is known; ``sm_archs`` are the provider's values (``90_real``)."""
    features: dict[str, list[str]] = {}
    if cuda_major is not None:
        features[CUDA_LOWER] = [str(cuda_major)]
    if sm_archs:
        features[SM_ARCH] = sorted(set(sm_archs))  # as variantlib writes them (order means nothing)
    if not features:
        raise InputError(
            "--variant: the wheel needs a CUDA build of torch but names no CUDA major and carries no "
            "GPU code: nothing for the NVIDIA provider to match; publish the plain wheel",
            reference="rewrite-refused",
        )
    if not all(_VALUE.fullmatch(v) for values in features.values() for v in values):
        raise InputError(f"variant values {features} must match [a-z0-9_.]+", reference="wheel-invalid")
    name = f"cu{cuda_major}" if cuda_major is not None else "cuda"
    doc = {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": [NVIDIA]},
        "providers": {NVIDIA: dict(NVIDIA_PROVIDER)},
        "variants": {name: {NVIDIA: features}},
    }
    return name, doc


def encode_variant_json(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def read_variant_json(data: bytes, where: str) -> dict[str, Any]:
    """A wheel's ``variant.json``, bounded and checked against the schema (``safejson``)."""
    doc: dict[str, Any] = safejson.load(data, f"{where}: {DIST_INFO_FILE}", SHAPE, reference="wheel-invalid")
    if len(doc["variants"]) != 1:
        raise InputError(
            f"{where}: {DIST_INFO_FILE} must describe exactly one variant", reference="wheel-invalid"
        )
    return doc


def merge_variant_files(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """``{name}-{version}-variants.json``: the union of the wheels' variant.json files.

    Two wheels that give one label different properties, or one provider namespace different
    plugins, contradict each other: refused, as variantlib's own merge refuses them."""
    namespaces: list[str] = []
    provs: dict[str, Any] = {}
    variants: dict[str, Any] = {}
    for doc in docs:
        for ns in doc.get("default-priorities", {}).get("namespace", []):
            if ns not in namespaces:
                namespaces.append(ns)
        for what, into, new in (
            ("provider", provs, doc.get("providers", {})),
            ("label", variants, doc["variants"]),
        ):
            for key, value in new.items():
                if into.setdefault(key, value) != value:
                    raise InputError(
                        f"variant {what} {clipped(json.dumps(key), 80)} is described two different ways",
                        reference="wheel-invalid",
                    )
    return {
        "$schema": SCHEMA,  # the form written is this one, whatever the wheels' files named
        "default-priorities": {"namespace": namespaces},
        "providers": provs,
        "variants": dict(sorted(variants.items())),
    }


def index_file_name(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-variants.json"


# -- what uv 0.13.9's preview parses beyond ``SHAPE`` (variantlib's reading, which already
# refuses unknown keys, empty value lists and names outside the grammar): each rule below is a
# refusal of uv 0.13.9 seen on a variants.json beside the wheels, and each fails the whole
# install (tests/e2e/test_variants_uv.py runs uv on every case and on what torchwheel writes)

# a provider is one of uv's ``ProviderKind``s, any of them with ``optional`` beside it
_PROVIDER_KINDS = frozenset(
    {frozenset({"requires"}), frozenset({"requires", "plugin-api"}), frozenset({"builtin"}),
     frozenset({"static-properties"})}
)  # fmt: skip


def installer_problem(doc: dict[str, Any]) -> str | None:
    """Why uv 0.13.9 would refuse this ``variants.json`` (or a wheel's ``variant.json``), or
    None. ``doc`` fits ``SHAPE``."""
    for key in ("$schema", "default-priorities"):
        if key not in doc:
            return f"the key {key!r} is missing"
    namespaces = doc["default-priorities"].get("namespace", [])
    if not namespaces or len(set(namespaces)) != len(namespaces):
        return "default-priorities.namespace is empty or names a namespace twice"
    providers = doc.get("providers")
    # PEP 850's format requires a provider per namespace; the others may have none at all
    if (providers is not None or doc["$schema"] == SCHEMA) and set(providers or {}) != set(namespaces):
        return f"the providers {sorted(providers or {})} are not the namespaces {namespaces} of default-priorities"
    for ns, provider in sorted((providers or {}).items()):
        if frozenset(provider) - {"optional"} not in _PROVIDER_KINDS:
            return f"the provider of {ns!r} has the keys {sorted(provider)}, a kind uv does not know"
    for name, variant in doc["variants"].items():
        if name == "null" and any(variant.values()):
            return "the null variant has properties"
        for ns, features in variant.items():
            if ns not in namespaces:
                return (
                    f"the variant {name!r} uses the namespace {ns!r}, which default-priorities does not list"
                )
            for feature, values in features.items():
                if len(set(values)) != len(values):
                    return f"{ns} :: {feature} names a value twice"
    return None
