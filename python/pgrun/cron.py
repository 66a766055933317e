"""pgrun's one cron grammar, on the Python side.

The SQL check (``pgrun._schedule_check_cron``, plpgsql/schedules/_validate.sql) and this
module accept exactly the same expressions: ``tests_data/cron_grammar.csv`` pins them row by
row through both, and a property test compares the two on generated expressions. croniter
then plans what the grammar accepts; the grammar is deliberately a subset of what croniter
parses (croniter also takes hashed and random fields, ``W``, last-weekday forms and ranges
that wrap or repeat, some of which mean something surprising), so what croniter version is
installed does not change which schedules pgrun stores.

The grammar (docs/schedules.md says the same in prose):

* at most 200 characters, checked before anything else; only ASCII letters and digits,
  ``* , - / # ?``, ``@``, blanks and tabs (blanks and tabs separate fields);
* a macro alone (``@yearly @annually @monthly @weekly @daily @midnight @hourly``, any case),
  or 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds last);
* a field is a comma list of items: ``*``, ``*/S``, ``A``, ``A-B``, ``A-B/S``, ``A/S``; numbers
  have one or two digits and lie in the field's range (minute and second 0-59, hour 0-23,
  day 1-31, month 1-12, weekday 0-7 with 0 and 7 Sunday); months and weekdays may be named
  with their three-letter English names in any case; a range rises (``A < B``; ``sun`` ending
  a range counts as 7); a step S is 1 up to the field's largest value; in the weekday field
  a start with a step (``A/S``) is 0-6;
* ``?`` alone in the day-of-month or weekday field means any; ``L`` alone in the day-of-month
  field is the month's last day;
* ``A#N`` in the weekday field is the N-th (1-5) such weekday of the month; then every item of
  the field is one and day-of-month is ``*`` or ``?``;
* an expression must be able to fire: when the weekday field is ``?`` or has a bare ``*``
  among its items (then day of month alone decides), some listed day must exist in some
  listed month (29 February counts: at most 8 years apart); fifth weekdays of February
  alone (decades apart) are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pgrun.errors import InvalidInputError

MAX_LENGTH = 200
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")

# per position: name, lowest and highest value
_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
    ("second", 0, 59),
)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_WEEKDAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_ALLOWED = re.compile(r"[0-9A-Za-z*,/#?@ \t-]*")
_ITEM = re.compile(r"(?:(\*)|([0-9]{1,2}|[A-Za-z]{3})(?:-([0-9]{1,2}|[A-Za-z]{3}))?)(?:/([0-9]{1,2}))?")
_NTH = re.compile(r"([0-9]{1,2}|[A-Za-z]{3})#([0-9])")


@dataclass
class _Field:
    values: set[int]  # the values it allows (weekday 7 folded to 0)
    star: bool = False  # ? or a list with a bare *
    last: bool = False  # day of month L
    nth: set[int] | None = None  # weekday field of A#N items: the N


class _Refused(Exception):
    pass


def check_cron(expression: object) -> str:
    """The expression with blanks collapsed (a macro in lower case), or raises
    ``InvalidInputError("schedule.invalid_cron")`` saying what is wrong."""
    try:
        return _check(expression)
    except _Refused as exc:
        shown = repr(expression) if not isinstance(expression, str) else repr(clip(expression))
        raise InvalidInputError("schedule.invalid_cron", f"cron {shown}: {exc}") from None


def seconds_field_warning(expression: str) -> str | None:
    """Why a valid six-field expression probably does not mean what its author thought, or
    None. The sixth field is seconds (croniter's order); people used to a seconds-first
    notation write ``*/2 * * * * *`` for "every 2 seconds", which here fires every second of
    every even minute. The trap: seconds ``*`` (every second) under a restricted minute."""
    fields = expression.split()
    if len(fields) != 6 or fields[5] != "*" or fields[0] == "*":
        return None
    return (
        f"cron {clip(expression)!r}: the sixth field is seconds (minute hour day month weekday "
        f"second), so '*' there fires every second of each minute that matches {fields[0]!r}. "
        f"For every N seconds write '* * * * * */N'; for once a minute write the second, "
        f"e.g. '{' '.join(fields[:5])} 0'."
    )


def clip(value: str, max_chars: int = 200) -> str:
    """``value`` cut to ``max_chars`` characters ending in `` [truncated]`` (as pgrun._clip)."""
    return value if len(value) <= max_chars else value[: max_chars - 12] + " [truncated]"


def _check(expression: object) -> str:
    if not isinstance(expression, str):
        raise _Refused("the expression is not text")
    if len(expression) > MAX_LENGTH:
        raise _Refused(f"the expression is {len(expression)} characters long (at most {MAX_LENGTH})")
    if not _ALLOWED.fullmatch(expression):
        raise _Refused(
            "the expression holds a character a cron expression cannot "
            "(letters, digits, blanks, tabs and * , - / # ? @ only)"
        )
    fields = [f for f in expression.replace("\t", " ").split(" ") if f]
    if not fields:
        raise _Refused("the expression is empty")
    normalized = " ".join(fields)
    if "@" in normalized:
        if normalized.lower() not in MACROS:
            raise _Refused(f"not a known macro ({', '.join(MACROS)})")
        return normalized.lower()
    if len(fields) not in (5, 6):
        raise _Refused(
            f"{len(fields)} fields; a cron expression has 5 (minute hour day month weekday) "
            "or 6 (the same, then seconds)"
        )
    parsed = [_field(i, f) for i, f in enumerate(fields)]
    dom, month, dow = parsed[2], parsed[3], parsed[4]
    if dow.nth is not None:
        if not dom.star:
            raise _Refused("an nth weekday (A#N) needs day of month * or ?")
        if month.values <= {2} and dow.nth == {5}:
            raise _Refused("a fifth weekday of February only comes decades apart")
    day_decides = dow.star and not dom.star and not dom.last
    if day_decides and not any(d <= _DAYS_IN_MONTH[m - 1] for m in month.values for d in dom.values):
        raise _Refused(f"day of month {fields[2]!r} never comes in month {fields[3]!r}")
    return normalized


def _value(index: int, token: str, *, range_end: bool = False) -> int:
    name, low, high = _FIELDS[index]
    if token.isdigit():
        value = int(token)
    else:
        names = _MONTHS if index == 3 else _WEEKDAYS if index == 4 else {}
        if token.lower() not in names:
            raise _Refused(f"{name} field: unknown name {token!r}")
        value = names[token.lower()]
        if index == 4 and range_end and value == 0:
            value = 7  # sun ending a range
    if not low <= value <= high:
        raise _Refused(f"{name} field: {value} is outside {low}..{high}")
    return value


def _field(index: int, text: str) -> _Field:
    name, low, high = _FIELDS[index]
    top = 6 if index == 4 else high  # weekday 7 is Sunday again
    if "?" in text:
        if text != "?" or index not in (2, 4):
            raise _Refused(f"{name} field {text!r}: ? stands alone, in day of month or day of week")
        return _Field(set(range(low, top + 1)), star=True)
    if index == 2 and text.lower() == "l":
        return _Field(set(), last=True)
    values: set[int] = set()
    nths: list[int] = []
    items = text.split(",")
    for item in items:
        if item == "":
            raise _Refused(f"{name} field {text!r}: an empty list item")
        nth = _NTH.fullmatch(item) if index == 4 else None
        if nth is not None:
            n = int(nth.group(2))
            if not 1 <= n <= 5:
                raise _Refused(f"{name} field {item!r}: the N of A#N is 1..5")
            values.add(_value(index, nth.group(1)) % 7)
            nths.append(n)
            continue
        m = _ITEM.fullmatch(item)
        if m is None:
            raise _Refused(f"{name} field {item!r}: not *, */S, A, A-B, A-B/S or A/S")
        star, start, end, step_text = m.groups()
        step = 1
        if step_text is not None:
            step = int(step_text)
            if not 1 <= step <= high:
                raise _Refused(f"{name} field {item!r}: a step is 1..{high}")
        if star:
            values.update(range(low, top + 1, step))
            continue
        a = _value(index, start)
        if end is not None:
            b = _value(index, end, range_end=True)
            if a >= b:
                raise _Refused(f"{name} field {item!r}: a range must rise")
            values.update(v % 7 if index == 4 else v for v in range(a, b + 1, step))
        elif step_text is not None:
            if a > top:
                raise _Refused(f"{name} field {item!r}: a start with a step is {low}..{top}")
            values.update(range(a, top + 1, step))
        else:
            values.add(a % 7 if index == 4 else a)
    if nths and len(nths) != len(items):
        raise _Refused(f"{name} field {text!r}: A#N items cannot be mixed with plain weekdays")
    # a bare * anywhere in the list makes the field "any" (croniter reads it so: day of month and
    # weekday then do not combine with "or")
    return _Field(values, star="*" in items, nth=set(nths) if nths else None)
