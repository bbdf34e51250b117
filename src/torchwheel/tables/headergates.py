"""What torch's headers declare with ``AOTI_TORCH_EXPORT``, and under which version gate.

A small C-preprocessor conditional tracker: only ``TORCH_FEATURE_VERSION >= / <
TORCH_VERSION_X_Y_Z`` conditions matter; every other conditional (``USE_CUDA``,
``__cplusplus``, include guards) is kept on the stack as a neutral frame so that
``#else``/``#endif`` still pair with the right ``#if``. ``symtable`` turns the result into
the shipped table.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from torchwheel.version import FeatureVersion

__all__ = [
    "BUILD_CONDITIONS",
    "ConditionalTracker",
    "Gate",
    "condition_gates",
    "max_gate",
    "min_gate",
    "scan_header_declarations",
    "scan_header_text",
]

Gate = FeatureVersion | None

_GATE_ATOM = re.compile(
    r"TORCH_FEATURE_VERSION\s*(?P<op>>=|<)\s*"
    r"(?:TORCH_VERSION_(?P<maj>\d+)_(?P<min>\d+)_(?P<pat>\d+)\b|(?P<hex>0[xX][0-9a-fA-F]+))"
)
_DIRECTIVE = re.compile(r"^\s*#\s*(?P<name>[a-z_]*)(?P<rest>.*)$", re.DOTALL)
_DECLARATION = re.compile(
    # Everything between the export macro and the name is return type: no parentheses,
    # braces or semicolons, which also stops a stray macro use from swallowing the
    # following declaration.
    r"\bAOTI_TORCH_EXPORT\b[^;{}()]*?\b(?P<name>[A-Za-z_]\w*)\s*\("
)
_EXPORT = re.compile(r"\bAOTI_TORCH_EXPORT\b")

# ---------------------------------------------------------------------------------------
# Preprocessor conditionals
# ---------------------------------------------------------------------------------------


def min_gate(gates: Iterable[Gate]) -> Gate:
    """Lowest of the gates, where an ungated (``None``) candidate wins outright."""
    best: Gate = None
    for gate in gates:
        if gate is None:
            return None
        best = gate if best is None else min(best, gate)
    return best


def max_gate(gates: Iterable[Gate]) -> Gate:
    """Highest of the gates that are set: nesting only ever narrows availability."""
    present = [gate for gate in gates if gate is not None]
    return max(present) if present else None


def _atom_gates(atom: str) -> tuple[Gate, Gate]:
    """(gate when the atom holds, gate when it does not) for one ``&&`` operand."""
    match = _GATE_ATOM.search(atom)
    if match is None:
        return None, None
    if match["hex"] is not None:
        version = FeatureVersion.from_int(int(match["hex"], 16))
    else:
        version = FeatureVersion(int(match["maj"]), int(match["min"]), int(match["pat"]))
    if atom.lstrip().startswith("!"):
        # ``!(TORCH_FEATURE_VERSION >= X)`` is ``< X``; the symmetric case likewise.
        return (None, version) if match["op"] == ">=" else (version, None)
    return (version, None) if match["op"] == ">=" else (None, version)


def condition_gates(expression: str) -> tuple[Gate, Gate]:
    """Feature-version gates implied by an ``#if`` expression and by its negation.

    The first element is the gate of the ``#if`` branch, the second that of an ``#else``
    branch. ``>= X`` gates the true branch at X; ``< X`` gates the false one. Conjunctions
    take the strictest gate, disjunctions the loosest, and anything we cannot see a
    version in is neutral: a wrong gate would make torchwheel reject or mis-tag wheels,
    while a missing one only loses precision.
    """
    disjuncts: list[tuple[Gate, Gate]] = []
    for disjunct in expression.split("||"):
        atoms = [_atom_gates(atom) for atom in disjunct.split("&&")]
        # A && B holds only when both hold; it fails when either fails.
        true_gate = max_gate(atom[0] for atom in atoms)
        false_gate = min_gate(atom[1] for atom in atoms)
        disjuncts.append((true_gate, false_gate))
    # A || B holds when either holds; it fails only when both fail.
    return min_gate(d[0] for d in disjuncts), max_gate(d[1] for d in disjuncts)


#: Build conditionals a declaration may sit under, and the torch build need each names: a
#: shim declared only ``#ifdef USE_DISTRIBUTED`` is there on a torch built with distributed.
BUILD_CONDITIONS = {"USE_DISTRIBUTED": "distributed"}
_CONDITION_WORD = re.compile(r"\b(" + "|".join(BUILD_CONDITIONS) + r")\b")


def _condition_needs(name: str, expression: str) -> frozenset[str]:
    """The build needs of the branch an ``#ifdef X`` / ``#if defined(X)`` / ``#if X`` opens
    (never of an ``#ifndef`` or a negation: those open the branch for builds without it)."""
    if name == "ifndef" or "!" in expression or "||" in expression:
        return frozenset()
    return frozenset(BUILD_CONDITIONS[m] for m in _CONDITION_WORD.findall(expression))


@dataclass
class _Frame:
    gate: Gate  # gate of the branch currently being read
    else_gate: Gate  # gate an ``#else`` would open
    live: bool  # False inside ``#if 0``
    else_live: bool
    needs: frozenset[str] = frozenset()  # build needs of the branch being read (``BUILD_CONDITIONS``)


@dataclass
class ConditionalTracker:
    """The stack of open ``#if`` frames, reduced to what availability needs.

    Feed it every directive in order; :attr:`gate` is then the version a declaration at
    the current position is gated at (the highest enclosing gate, ``None`` if ungated),
    and :attr:`live` is False inside ``#if 0`` blocks whose contents no compiler sees.
    """

    _stack: list[_Frame] = field(default_factory=list)

    @property
    def depth(self) -> int:
        return len(self._stack)

    @property
    def gate(self) -> Gate:
        return max_gate(frame.gate for frame in self._stack)

    @property
    def live(self) -> bool:
        return all(frame.live for frame in self._stack)

    @property
    def needs(self) -> frozenset[str]:
        return frozenset().union(*(frame.needs for frame in self._stack))

    def directive(self, name: str, rest: str) -> None:
        """Apply one preprocessor directive (``name`` without the ``#``)."""
        expression = rest.strip()
        if name == "if":
            gate, else_gate = condition_gates(expression)
            live = expression != "0"
            self._stack.append(
                _Frame(gate, else_gate, live, expression != "1", _condition_needs(name, expression))
            )
        elif name in ("ifdef", "ifndef"):
            self._stack.append(_Frame(None, None, True, True, _condition_needs(name, expression)))
        elif name == "elif":
            frame = self._top(name)
            gate, else_gate = condition_gates(expression)
            # Reaching an #elif means every earlier branch failed, so the earlier
            # negation still applies on top of this branch's own condition.
            frame.gate = max_gate((frame.else_gate, gate))
            frame.else_gate = max_gate((frame.else_gate, else_gate))
            frame.live = frame.else_live and expression != "0"
            frame.else_live = frame.else_live and expression != "1"
            frame.needs = _condition_needs("if", expression)
        elif name == "else":
            frame = self._top(name)
            frame.gate, frame.else_gate = frame.else_gate, None
            frame.live, frame.else_live = frame.else_live, False
            frame.needs = frozenset()
        elif name == "endif":
            self._top(name)
            self._stack.pop()
        # #define, #include, #pragma, #error, #undef ...: no effect on availability.

    def _top(self, name: str) -> _Frame:
        if not self._stack:
            raise ValueError(f"#{name} without a matching #if")
        return self._stack[-1]


# ---------------------------------------------------------------------------------------
# Header text
# ---------------------------------------------------------------------------------------


def _strip_comments(text: str) -> str:
    """Blank out comments, keeping newlines and string literals intact.

    String literals matter because ``[[deprecated("...")]]`` messages could hold ``//``;
    newlines matter because directives are line-based.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            j = i + 1
            while j < n and text[j] != char and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _logical_lines(text: str) -> Iterator[str]:
    """Physical lines with backslash continuations joined, as the preprocessor sees them.

    Joining is what keeps a multi-line ``#define`` body out of the declaration scan.
    """
    pending = ""
    for line in text.splitlines():
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def scan_header_text(text: str) -> dict[str, Gate]:
    """Every ``AOTI_TORCH_EXPORT`` function in one header, with the gate it sits behind.

    A name declared more than once keeps its most permissive declaration: if any copy is
    visible to a target, the function is available to that target.
    """
    return {name: gate for name, (gate, _) in scan_header_declarations(text).items()}


def scan_header_declarations(text: str) -> dict[str, tuple[Gate, frozenset[str]]]:
    """``scan_header_text``, with the build needs of the conditionals each declaration sits
    under (``BUILD_CONDITIONS``); a name declared twice needs only what both copies need."""
    tracker = ConditionalTracker()
    code: list[str] = []
    starts: list[int] = []
    gates: list[Gate] = []
    needs: list[frozenset[str]] = []
    offset = 0
    for line in _logical_lines(_strip_comments(text)):
        directive = _DIRECTIVE.match(line)
        if directive is not None:
            tracker.directive(directive["name"], directive["rest"])
            continue
        if not tracker.live:
            continue
        starts.append(offset)
        gates.append(tracker.gate)
        needs.append(tracker.needs)
        code.append(line)
        offset += len(line) + 1
    joined = "\n".join(code)

    found: dict[str, tuple[Gate, frozenset[str]]] = {}
    for export in _EXPORT.finditer(joined):
        declaration = _DECLARATION.match(joined, export.start())
        if declaration is None:
            continue  # not a function (or a shape we do not parse): nothing to import
        at = bisect.bisect_right(starts, export.start()) - 1
        gate, need = gates[at], needs[at]
        name = declaration["name"]
        if name in found:
            gate, need = min_gate((found[name][0], gate)), found[name][1] & need
        found[name] = (gate, need)
    return found


# ---------------------------------------------------------------------------------------
# Sources: wheel files, site-packages, include directories
# ---------------------------------------------------------------------------------------
