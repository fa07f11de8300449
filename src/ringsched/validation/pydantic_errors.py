"""A pydantic ValidationError of a YAML document as one InputError naming file, row and field."""

from __future__ import annotations

from pydantic import ValidationError

from ringsched.errors import InputError
from ringsched.validation.yaml_doc import YamlDoc, location


def input_error(e: ValidationError, doc: YamlDoc, *, prefix: tuple = ()) -> InputError:
    """The first error of ``e``; ``prefix`` is where the validated value sits in ``doc``."""
    err = e.errors()[0]
    loc = (*prefix, *err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    kind = err.get("type", "")
    if kind == "missing":
        msg = "is required"
    elif kind == "extra_forbidden":
        msg = "unknown key"
    elif "input" in err and kind not in ("value_error", "assertion_error") and not isinstance(err["input"], dict):
        shown = repr(err["input"])
        msg = f"{msg}, got {shown if len(shown) <= 80 else shown[:77] + '...'}"
    return InputError(msg, file=doc.file, row=doc.line_of(loc), field=location(loc) or None)
