"""Client and AsyncClient cannot drift (issue 14 item 3).

The two classes hold the same public methods: the same names, the same parameters (names,
kinds, defaults, annotations), the same return annotation and the same docstring, one
blocking, the other ``async``. Beyond the signatures, every method but ``connect`` has the
same body in both (compared as syntax trees with ``await`` taken out), so a method of one
cannot call another builder, or pass another argument, than its twin. A method added to one
class only, or changed in one only, fails here with its name.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from pgrun.client import AsyncClient, Client

#: Methods whose bodies differ by nature: the pool classes and their configure hooks.
DIFFERENT_BODIES = {"connect"}


def public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """Every public function defined on ``cls`` (classmethods unwrapped)."""
    found: dict[str, Callable[..., Any]] = {}
    for name, raw in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(raw, classmethod | staticmethod):
            raw = raw.__func__
        if inspect.isfunction(raw):
            found[name] = raw
    return found


SYNC = public_methods(Client)
ASYNC = public_methods(AsyncClient)


def _twin(annotation: Any) -> Any:
    """An annotation of AsyncClient as Client spells it (annotations are strings here)."""
    if isinstance(annotation, str):
        return annotation.replace("AsyncClient", "Client")
    return annotation


def _unwrapped(annotation: Any) -> Any:
    """A return annotation modulo Awaitable[...] / Coroutine[Any, Any, ...]."""
    text = _twin(annotation)
    if isinstance(text, str):
        for prefix in ("Awaitable[", "Coroutine[Any, Any, "):
            if text.startswith(prefix) and text.endswith("]"):
                return text[len(prefix) : -1]
    return text


def test_both_clients_have_the_same_public_methods() -> None:
    assert sorted(SYNC) == sorted(ASYNC), {
        "only in Client": sorted(set(SYNC) - set(ASYNC)),
        "only in AsyncClient": sorted(set(ASYNC) - set(SYNC)),
    }
    # the SQL functions the clients wrap: a sanity floor, so an empty comparison cannot pass
    assert {"enqueue_job", "claim_jobs", "list_schedules", "pause_schedule"} <= set(SYNC)


@pytest.mark.parametrize("name", sorted(SYNC))
def test_a_method_has_the_same_signature_and_docstring_in_both(name: str) -> None:
    sync, coro = SYNC[name], ASYNC.get(name)
    assert coro is not None, f"AsyncClient.{name} is missing"
    assert inspect.iscoroutinefunction(coro), f"AsyncClient.{name} is not async"
    assert not inspect.iscoroutinefunction(sync), f"Client.{name} is async"
    s, a = inspect.signature(sync), inspect.signature(coro)
    assert [(p.name, p.kind, p.default, p.annotation) for p in s.parameters.values()] == [
        (p.name, p.kind, p.default, _twin(p.annotation)) for p in a.parameters.values()
    ], name
    assert _unwrapped(s.return_annotation) == _unwrapped(a.return_annotation), name
    assert inspect.getdoc(sync) == inspect.getdoc(coro), name
    if name not in ("close",):
        assert inspect.getdoc(sync), f"Client.{name} has no docstring"


class _Normalise(ast.NodeTransformer):
    """An async method's tree as its blocking twin would read: no await, no async def,
    AsyncClient named Client."""

    def visit_Await(self, node: ast.Await) -> ast.AST:
        return self.visit(node.value)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "AsyncClient":
            return ast.copy_location(ast.Name(id="Client", ctx=node.ctx), node)
        return node


def _tree(function: Callable[..., Any]) -> str:
    source = textwrap.dedent(inspect.getsource(function))
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    normalised = _Normalise().visit(node)
    parts = (normalised.args, normalised.returns, normalised.body, normalised.decorator_list)
    return "\n".join(ast.dump(p) if isinstance(p, ast.AST) else repr([ast.dump(x) for x in p]) for p in parts)


@pytest.mark.parametrize("name", sorted(set(SYNC) - DIFFERENT_BODIES))
def test_a_method_has_the_same_body_in_both_but_for_await(name: str) -> None:
    assert _tree(SYNC[name]) == _tree(ASYNC[name]), (
        f"Client.{name} and AsyncClient.{name} differ beyond async/await"
    )


def test_the_body_check_sees_a_difference() -> None:
    """The comparison is not vacuous: two methods that call different builders differ."""
    assert _tree(SYNC["get_job"]) != _tree(ASYNC["list_jobs"])
    assert _tree(SYNC["get_job"]) == _tree(ASYNC["get_job"])
