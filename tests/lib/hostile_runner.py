"""A fork server for the hostile-corpus runs: ``python -m torchwheel`` without the import cost.

The corpus runs about 1,500 commands; a fresh interpreter spends ~0.5 s of each importing
torchwheel, which alone would take the test past its CI budget. This process imports
torchwheel once, then for each request (one JSON line on stdin) forks a child that does what
``python -m torchwheel ARGS`` does: chdir, environment, stdin from /dev/null, stdout/stderr to
files, ``torchwheel.cli.main()``. The parent waits with ``os.wait4`` for the child's own peak
RSS (which counts the pages shared with this server, as a fresh process would count its own
imports), kills it past the timeout, and answers with one JSON line.

Set TORCHWHEEL_HOSTILE_FRESH=1 in the test to run fresh processes instead (slower, identical
assertions).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time

import torchwheel.cli


def _preimport() -> None:
    """Every torchwheel module, once: the commands import most of them lazily (rules alone
    costs ~0.3 s), and a forked child would pay that on every run. The children's peak RSS
    then counts the pages of modules a run may not need: the budget check errs strict."""
    import importlib
    import pkgutil

    import torchwheel

    for mod in pkgutil.walk_packages(torchwheel.__path__, "torchwheel."):
        if mod.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(mod.name)
        except Exception:  # an optional extra: the child imports it if it must
            continue


def _child(req: dict[str, object]) -> None:
    os.setsid()
    limit = int(req["address_space"])  # type: ignore[call-overload]
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.chdir(str(req["cwd"]))
    os.environ.clear()
    env: dict[str, str] = req["env"]  # type: ignore[assignment]
    os.environ.update(env)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(os.open(str(req["stdout"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    os.dup2(os.open(str(req["stderr"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    sys.argv = ["torchwheel", *req["args"]]  # type: ignore[misc]
    code = 0
    try:
        torchwheel.cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def serve() -> None:
    for line in sys.stdin:
        req = json.loads(line)
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(req)
        timed_out = False
        deadline = start + float(req["timeout"])
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline and not timed_out:
                timed_out = True
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)
        answer = {
            "code": os.waitstatus_to_exitcode(status),
            "peak_mb": usage.ru_maxrss / 1024,
            "seconds": time.monotonic() - start,
            "cpu": usage.ru_utime + usage.ru_stime,
            "timed_out": timed_out,
        }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _preimport()
    serve()
