"""What to change in a call that failed, read from its error: the argument it names or left out.

`repeat_failed_call`'s instruction and its block rung's re-ask say it: the cause `sed` gave for a
script it could not parse, else a required argument the call left out (one the error names first),
else a text to replace that is in the file more than once, else an argument the error names, else
its arguments at large. A table of errors and what is asked: `tests/unit/test_failed_call_change.py`.
"""

from __future__ import annotations

import re

from proxy.engine.reading.proposal import OLD_ARGS
from proxy.engine.reading.replace_refused import more_than_once
from proxy.engine.reading.sed import rejected_because
from proxy.engine.writing.context import RemedyContext

__all__ = ["naming", "what_to_change"]


def _named(argument: str, error: str) -> bool:
    return naming(argument).search(error) is not None


def naming(argument: str) -> re.Pattern[str]:
    """The argument, lower-cased, as a word of its own (the growth test builds one too)."""
    return re.compile(rf"(?<![\w-]){re.escape(argument.lower())}(?![\w-])")


_REQUIRED = re.compile(
    r"(?:parameter|argument|field)s?\s+[`'\"]?(\w+)[`'\"]?\s+(?:is|are)\s+(?:required|missing)|"
    r"missing required (?:parameters?|arguments?)[^{\n]*\{([^}\n]*)\}",
    re.IGNORECASE,
)
"""An error naming the argument the call left out: "Parameter `old_str` is required for command:
str_replace" (OpenHands), "Missing required parameters for function 'bash': {'timeout'}"."""


def _said_required(error: str) -> list[str]:
    """The arguments an error says are required and missing, as it names them."""
    names: list[str] = []
    for match in _REQUIRED.finditer(error[:400]):
        if match.group(1):
            names.append(match.group(1))
        else:
            names += [n.strip(" '\"") for n in match.group(2).split(",") if n.strip(" '\"")]
    return names


def what_to_change(tool_name: str, arguments: tuple[str, ...], quote: str, context: RemedyContext) -> str:
    """What to change: the cause sed gave for a script it could not parse, else a required
    argument the call left out (one the error names first), else an argument the error names,
    else its arguments at large."""
    if (cause := rejected_because(quote)) is not None:
        return f"Its `sed` script does not parse: {cause}."
    error = quote.lower()
    tool = context.offered.get(tool_name)
    missing = sorted(tool.required - set(arguments)) if tool is not None else []
    missing += [name for name in _said_required(quote) if name not in arguments and name not in missing]
    missing.sort(key=lambda a: not _named(a, error))
    if missing:
        return f"Add the required argument `{missing[0]}`."
    old = next((a for a in arguments if a in OLD_ARGS), None)
    if old is not None and more_than_once(quote):
        return f"`{old}` is in the file more than once: add the lines around the one you mean, so it matches once."
    mentioned = [a for a in arguments if _named(a, error)]
    if mentioned:
        return f"Change `{mentioned[-1]}`: the error is about it."
    return "Change its arguments, or take a different step."
