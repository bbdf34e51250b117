"""The rule registry: every code of ``rules.codes`` has exactly one check, named for the code.

One word per concept: a reader who meets ``torch_requirement_too_loose`` in a traceback or a
profile knows it is TW503 ``torch-requirement-too-loose`` without opening the module, and no
two rule functions share a name (``missing`` was once TW101's and TW501's both)."""

from __future__ import annotations

from torchwheel.rules import REGISTRY
from torchwheel.rules.codes import CODES


def test_every_code_has_one_rule() -> None:
    assert sorted(REGISTRY) == sorted(c.code for c in CODES)


def test_each_rule_function_is_named_for_its_code() -> None:
    wrong = [
        (code, r.name, r.check.__name__)
        for code, r in sorted(REGISTRY.items())
        if r.check.__name__ != r.name.replace("-", "_")
    ]
    assert wrong == []


def test_no_two_rules_share_a_function_name() -> None:
    names = [r.check.__name__ for r in REGISTRY.values()]
    assert len(names) == len(set(names)) == len(REGISTRY) > 50
