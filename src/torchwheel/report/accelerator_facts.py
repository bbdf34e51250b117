"""The accelerator part of show and inspect's rendering: the runtimes a library links, the
torch build that implies, and its GPU code (kernels, PTX, ROCm targets), as JSON-ready dicts
and one-line texts. Nothing here decides anything: ``torchabi.accelerators`` does.
"""

from __future__ import annotations

from typing import Any

from torchwheel.binary.gpucode import GpuCode
from torchwheel.torchabi.accelerators import AcceleratorNeeds
from torchwheel.torchabi.cuda_archs import cubin_archs, ptx_cuda, ptx_images


def _dotted(pair: tuple[int, int] | None) -> str | None:
    return None if pair is None else f"{pair[0]}.{pair[1]}"


def gpu_json(g: GpuCode) -> dict[str, Any]:
    return {
        "cubin": list(cubin_archs(g)),
        "ptx": [
            {
                "arch": i.name,
                "isa": _dotted(i.ptx_isa),
                "cuda": _dotted(ptx_cuda(i.ptx_isa) if i.ptx_isa else None),
            }
            for i in ptx_images(g)
        ],
        "images": [
            {
                "kind": i.kind,
                "arch": i.name,
                "ptx_isa": _dotted(i.ptx_isa),
                "compressed": i.compressed,
                "count": n,
            }
            for i, n in g.cuda
        ],
        "cuda_fatbins": g.containers,
        "registered": g.registered,
        "rocm_targets": list(g.rocm_targets),
        "rocm_bundles": g.rocm_bundles,
        "problems": list(g.problems),
    }


def accelerator_json(a: AcceleratorNeeds) -> dict[str, Any]:
    return {
        "label": a.label,
        # the torch libraries it links: their accelerator, "any" (libtorch alone), None (none)
        "torch_build": a.torch_accelerator or ("any" if a.links_torch else None),
        "accelerators": list(a.accelerators),
        "cuda_majors": list(a.cuda_majors),
        "rocm_majors": list(a.rocm_majors),
        "static_cudart": a.static_cudart,
        "libraries": [
            {
                "name": lib.name,
                "role": lib.role,
                "component": lib.component,
                "accelerator": lib.accelerator,
                "major": lib.major,
                "toolkit_major": lib.toolkit_major,
            }
            for lib in a.libraries
        ],
        "gpu_code": gpu_json(a.gpu),
    }


def need_text(a: AcceleratorNeeds) -> str:
    """One sentence: "needs a CUDA 13 build of torch: libcudart.so.13, libtorch_cuda.so"."""
    names = [lib.name for lib in a.libraries if lib.role != "library"] or [lib.name for lib in a.libraries]
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    label = a.label
    if a.torch_accelerator is not None:
        text = f"needs a {label} build of torch"
    elif a.links_torch:
        text = "needs torch (any build)" + (f" and {label}" if a.accelerators else "")
    elif a.accelerators:
        text = f"needs {label}"
    else:
        return ""
    if a.static_cudart and "static" not in label:
        text += "; CUDA runtime linked in (static)"
    return text + (f": {shown}" if shown else "")


def gpu_text(g: GpuCode, span: bool = False) -> str:
    """ "kernels sm_75, sm_90a; PTX compute_90 (CUDA 13.0)"; ``span``: the first and last
    architecture only, for a wheel's one-line summary."""
    parts = []
    archs = cubin_archs(g)
    if archs:
        shown = f"{archs[0]}…{archs[-1]}" if span and len(archs) > 2 else ", ".join(archs)
        parts.append(f"kernels {shown}")
    ptx = ptx_images(g)
    if ptx:
        parts.append(
            "PTX "
            + ", ".join(
                i.name
                + (
                    f" (CUDA {'.'.join(map(str, ptx_cuda(i.ptx_isa) or ()))})"
                    if i.ptx_isa and ptx_cuda(i.ptx_isa)
                    else ""
                )
                for i in ptx
            )
        )
    elif archs:
        parts.append("no PTX")
    if g.rocm_targets:
        targets = sorted({t.rsplit("--", 1)[-1] for t in g.rocm_targets})
        if span and len(targets) > 3:
            parts.append(f"ROCm {len(targets)} targets ({targets[0]}…{targets[-1]})")
        else:
            parts.append("ROCm " + ", ".join(targets))
    elif g.rocm_bundles:
        parts.append(f"ROCm {g.rocm_bundles} offload bundle(s)")
    if g.problems:
        parts.append(f"read in part: {g.problems[0]}")
    return ", ".join(parts)
