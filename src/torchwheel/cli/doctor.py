"""``torchwheel doctor``: which installed extensions load on the environment's torch, and
which break on the torch about to be installed (``doctor.checkup``; exit codes: ``cli/exits.py``)."""

from __future__ import annotations

from pathlib import Path

import click

from torchwheel.cli.jsonout import json_failures, print_document
from torchwheel.cli.options import (
    against_option,
    chosen_table,
    format_option,
    gpu_option,
    no_config_option,
    python_option,
    symbols_option,
    torch_backend_option,
    torch_option,
)
from torchwheel.errors import Exit


@click.command("doctor", short_help="Which installed extensions load on this torch, or the next one.")
@python_option
@torch_option("Judge a torch that is not installed: the one about to be (X.Y: every release of the minor).")
@torch_backend_option(
    "With --torch: its build, by PyTorch's backend names (cpu, cu128, cu130, rocm7.1, xpu); "
    "without it a CUDA/ROCm/XPU extension's build is not judged (unknown)."
)
@against_option(
    "Judge a torch wheel or a directory holding torch/lib (as `compat` takes it): its exports decide."
)
@gpu_option
@click.option(
    "--explain",
    metavar="MODULE|ERROR",
    help="A module name (xformers._C) or the text of an ImportError ('undefined symbol: ...', "
    "'cannot open shared object file'): its file, its distribution, what it lacks and the fix.",
)
@format_option("text", "json", "markdown", "github")
@json_failures("doctor")
@symbols_option
@no_config_option
def doctor_command(
    python: str | None,
    torch_version: str | None,
    torch_backend: str | None,
    against: str | None,
    gpu: str | None,
    explain: str | None,
    fmt: str,
    symbols_file: Path | None,
    no_config: bool,
) -> Exit:
    """Which installed extensions load on this environment's torch, and which break on another.

    Every installed distribution with compiled torch code is read in place through its
    RECORD (nothing of the environment imported, executed or written: the interpreter runs
    with -I -S, .pth import lines are listed, not run) and judged: exit 0 all load, 1 one
    does not (or cannot be judged), 2 an environment that cannot be read.
    """
    from torchwheel.doctor.checkup import doctor as run_doctor
    from torchwheel.doctor.diagnosis import environment_summary
    from torchwheel.doctor.doctor_report import doctor_github, doctor_markdown, doctor_text

    found = run_doctor(
        python=python,
        torch=torch_version,
        torch_backend=torch_backend,
        against=against,
        gpu=gpu,
        explain=explain,
        symbols=chosen_table(symbols_file, no_config),
    )
    where = found.target.description
    if fmt == "json":
        print_document(found.to_json())
    elif fmt == "markdown":
        click.echo(doctor_markdown(where, found.diagnosis, found.explanation))
    elif fmt == "github":
        out = doctor_github(found.diagnosis)
        if out:
            click.echo(out)
        click.echo(environment_summary(found.diagnosis))  # for the log
    else:
        click.echo(doctor_text(where, found.diagnosis, found.explanation))
    return Exit(found.exit_code)
