"""The model an unanalysed request names (a metric label and a span attribute), read without
parsing the whole body where one member names it, as a parse would read it. One difference,
stated: a body whose only `model` member is nested (no model of its own: a request the upstream
refuses) is labelled with that one."""

from __future__ import annotations

import orjson
import pytest

from proxy.http.observe.record import requested_model as _requested_model

TOOL_TEXT = 'the config says {"model": "gpt-x"} here'
CASES = [
    ("one model member", {"model": "qwen2.5-coder:1.5b", "messages": []}, "qwen2.5-coder:1.5b"),
    ("after the messages", {"messages": [{"role": "user", "content": "hi"}], "model": "org/m@v1"}, "org/m@v1"),
    ("a message's text quoting a model", {"messages": [{"role": "tool", "content": TOOL_TEXT}], "model": "a"}, "a"),
    ("a nested model member too", {"metadata": {"model": "inner"}, "model": "outer"}, "outer"),
    ("only a nested one (the stated difference)", {"metadata": {"model": "inner"}, "messages": []}, "inner"),
    ("an empty model", {"model": "", "messages": []}, None),
    ("a name with characters the scan leaves to the parse", {"model": "my model é"}, "my model é"),
    ("no model", {"messages": []}, None),
]


@pytest.mark.parametrize(("name", "body", "model"), CASES, ids=[c[0] for c in CASES])
def test_the_requested_model_is_what_a_parse_reads(name: str, body: dict[str, object], model: str | None) -> None:
    assert _requested_model(orjson.dumps(body)) == model
    assert _requested_model(orjson.dumps(body, option=orjson.OPT_INDENT_2)) == model
