"""What a held edit's replacement must keep: the definitions of the lines it replaces.

A re-ask held to the editor's call with the lines to change as its text to replace (the function
the failure calls, as the agent last saw it) leaves the replacement to the model. Asked that way,
a small model wrote the one line it meant to change and nothing else, deleting the function the
failing test calls: `VOWELS = "aeiou"` in place of the constant and `count_vowels` whole, the
test then failing to import (recovery bench, vowels in OpenHands style, seeds 1 and 2 at 6f299c0).
So the replacement is held to a pattern that has each `def` and `class` header of those lines,
by name, in their order, and any text around them.

    "VOWELS = 'aeio'\\n\\ndef count_vowels(text):\\n    ..."  -> ^J*def count_vowels\\(J*$
    "x = 1"                                                -> None (no definition: free)

The pattern is on the JSON text the model writes between the string's quotes (llama.cpp turns a
`pattern` into grammar rules over those characters, `sed_script.SED_SCRIPT`): J is one character
of it, a plain one or one of JSON's two-character escapes; a `"` only as `\\"`, no control
character, no `\\u` escape. xgrammar (the structured-output backend vLLM and SGLang use by
default) reads it the same way: its JSON-schema converter puts the pattern's rules between the
two quote characters (read in its source, `cpp/json_schema_converter.cc`; not run here). (Ollama's
experimental MLX schema converter also puts a pattern between the quotes, but turns one with a
`*` into any string: free there.) A server that read `pattern` on the decoded value instead (JSON
Schema's own reading) would hold the replacement to one line, its line breaks written as a
backslash and an `n`: none such seen, not measured.
"""

from __future__ import annotations

import re

__all__ = ["definitions_kept"]

_HEADER = re.compile(r"^[ \t]*(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
_JSON_CHAR = r"""([^"\\\x00-\x1f\x7f]|[\\]["\\/bfnrt])"""
"""One character of a JSON string's text: plain, or an escape of one character."""
_AFTER_NAME = {"def": r"\(", "class": "[(:]"}


def definitions_kept(lines: str) -> str | None:
    """A pattern for the replacement of `lines` that holds every `def` and `class` header they
    have, in order; None when they have none."""
    headers = dict.fromkeys(f"{kind} {name}{_AFTER_NAME[kind]}" for kind, name in _HEADER.findall(lines))
    if not headers:
        return None
    return f"^{_JSON_CHAR}*" + "".join(f"{header}{_JSON_CHAR}*" for header in headers) + "$"
