"""Reading a module's imports without running it, for the layout tests: every absolute
import at any depth (the commands import lazily, inside their functions), optionally
leaving out those under ``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the imports under ``if TYPE_CHECKING:`` in ``tree``."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            found.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return found


def imports(source: str, *, types_exempt: bool = False) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every absolute import in ``source``, at any depth."""
    tree = ast.parse(source)
    skip = _type_only(tree) if types_exempt else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
