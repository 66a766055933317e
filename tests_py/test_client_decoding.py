"""How the client decodes stored JSON and builds result rows.

JSON: orjson first, the stdlib's json for what orjson refuses or would decode differently
(integers past 64 bits), an UndecodableJson marker for what neither decodes; whatever the path,
a document decodes to exactly what ``json.loads`` makes of it. Rows: every result class, wide or
narrow, comes out as its own ``__init__`` makes it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgrun import results
from pgrun.client import Client, _loads, _record_row
from pgrun.results import UndecodableJson

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_document_decodes_as_the_stdlib_decodes_it(value: Any) -> None:
    text = json.dumps(value)
    assert _loads(text) == json.loads(text)
    assert _loads(text.encode()) == json.loads(text)


def test_what_orjson_refuses_goes_to_the_stdlib_and_what_neither_decodes_is_a_marker() -> None:
    # orjson stops at 255 levels and makes floats of integers past 64 bits; the stdlib does not
    assert _loads(_nested(300)) == json.loads(_nested(300))
    assert _loads("123456789012345678901234567890") == 123456789012345678901234567890
    for edge in (2**63, 2**64, 2**64 + 1, -(2**63) - 1, 10**18, -(10**18)):
        assert _loads(str(edge)) == edge and isinstance(_loads(str(edge)), int)
    assert _loads('{"big": -98765432109876543210987654321}') == {"big": -98765432109876543210987654321}
    deep = _loads(_nested(100_000))
    assert isinstance(deep, UndecodableJson)
    assert deep.size == 200_000


def test_stored_documents_come_back_as_the_stdlib_decodes_them(db: str) -> None:
    """Through a pgrun connection: jsonb as PostgreSQL prints it (numbers in its own notation,
    keys in its order), the nesting orjson refuses, and integers past 64 bits."""
    documents = [
        '{"n": 1, "f": 1.5e300, "tiny": 1e-300, "neg": -0.0, "s": "\\u00e9\\ud83d\\ude00", "t": true}',
        '{"big": 123456789012345678901234567890, "exact": 0.1000000000000000055511151231257827}',
        _nested(300),
        '{"a": [1, {"b": [null, false, "x"]}], "": {}}',
    ]
    with Client.connect(db) as client, client.pool.connection() as conn:
        for document in documents:
            row = conn.execute("SELECT %s::jsonb, %s::jsonb::text", (document, document)).fetchone()
            assert row is not None
            decoded, printed = row
            assert decoded == json.loads(printed), document
    with psycopg.connect(db) as plain:  # a connection pgrun did not configure: the stdlib's decoder
        row = plain.execute("SELECT %s::jsonb", (documents[1],)).fetchone()
        assert row is not None and row[0] == json.loads(documents[1])


class _Column:
    def __init__(self, name: str) -> None:
        self.name = name


class _Result:
    def __init__(self, names: tuple[str, ...]) -> None:
        self.nfields = len(names)
        self._names = [n.encode() for n in names]

    def fname(self, column: int) -> bytes:
        return self._names[column]


class _Cursor:
    def __init__(self, names: tuple[str, ...]) -> None:
        self.description = [_Column(n) for n in names]
        self.pgresult = _Result(names)


@pytest.mark.parametrize(
    "cls", [c for c in vars(results).values() if dataclasses.is_dataclass(c) and isinstance(c, type)]
)
def test_every_result_row_is_what_its_init_makes(cls: type) -> None:
    """Rows whose columns are the class's fields, in order: a wide class is built by filling its
    instance dictionary, a narrow one through __init__; either way the same frozen value."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    values = tuple(f"v{i}" for i in range(len(names)))
    row = _record_row(cls)(_Cursor(names))(values)
    assert type(row) is cls and row == cls(*values) and repr(row) == repr(cls(*values))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(row, names[0], "changed")


@pytest.mark.parametrize("cls", [results.ClaimedJob, results.Heartbeat])
def test_a_result_whose_columns_are_not_the_fields_in_order_is_built_by_name(db: str, cls: type) -> None:
    """Values are taken in order only when the server's column names are the class's fields in
    order (read from the result itself); the same columns in another order, or with one renamed,
    make the row by name (or fail, naming the column), never a row with values in wrong fields."""
    names = [f.name for f in dataclasses.fields(cls)]
    values = {name: f"v{i}" for i, name in enumerate(names)}

    def select(order: list[str], alias: dict[str, str] | None = None) -> str:
        alias = alias or {}
        return "SELECT " + ", ".join(f"'{values[n]}'::text AS {alias.get(n, n)}" for n in order)

    with psycopg.connect(db) as conn:
        in_order = conn.cursor(row_factory=_record_row(cls)).execute(select(names)).fetchone()
        reversed_ = conn.cursor(row_factory=_record_row(cls)).execute(select(names[::-1])).fetchone()
        assert in_order == cls(**values) == reversed_
        renamed = select(names, {names[-1]: "something_else"})
        with pytest.raises(TypeError, match="something_else"):
            conn.cursor(row_factory=_record_row(cls)).execute(renamed).fetchone()
