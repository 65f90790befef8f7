"""Where the conversation stands for this request's reply, and what a gate's request is made of:
the transcript as it goes upstream with one directive after it, and the call `force` pins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy.engine.detectors import Forced, Levers, Trip, pattern_of
from proxy.engine.plan.callschema import call_schema
from proxy.engine.plan.rules import Rules
from proxy.engine.state.conversation import ConversationState, Injection
from proxy.engine.text.exchange import Edit
from proxy.engine.text.salvage import offered_tools
from proxy.engine.writing.vocabulary import Call, Learnt
from proxy.settings.kinds import Action

__all__ = ["Turn", "forced_schema", "forced_tool", "held_retry", "retry"]


def forced_tool(tail_trips: list[Trip], levers: Levers) -> Forced | None:
    """`force` pins the next call, as the last forcing pattern chooses."""
    forced = [t for t in tail_trips if t.action is Action.FORCE]
    return pattern_of(forced[-1]).force(forced[-1], levers) if forced else None


def forced_schema(rules: Rules, tools: list[Any] | None, forced: Forced | None) -> dict[str, Any] | None:
    """The schema of the call `force` pins (`callschema.py`), its kind-picking argument narrowed to
    the values of the kind wanted; None when the policy asks for no constrained calls."""
    reply = rules.policy.reply
    if forced is None or not (reply.salvage and reply.constrain_calls):
        return None
    if not forced.tool:
        return call_schema(tools, {name for name in offered_tools(tools)})
    if forced.call is not None:
        return call_schema(tools, {forced.call.name}, pinned={forced.call.name: forced.call.arguments})
    _fixed, arg, values, _shell = rules.classifier.rule_of(forced.tool)
    wanted = [value for value, kind in values.items() if kind is forced.kind]
    narrow = {forced.tool: (arg, wanted)} if arg and wanted else None
    return call_schema(tools, {forced.tool}, narrow)


@dataclass(frozen=True, slots=True)
class Turn:
    """What the reply rules need to know about where the conversation stands."""

    messages: list[Any]
    """The request's messages as they go upstream (instructions placed)."""
    state: ConversationState
    levers: Levers
    tools: Learnt
    """The request's tools, their vocabulary learnt once for every gate that asks."""
    mid_task: bool
    """The transcript ends with a tool result, or with an instruction of ours."""
    unanswered: tuple[Injection, ...]
    """Our instructions of this episode that no tool call has followed yet."""
    nagged: bool
    """The agent answered a reply without a call by repeating its own request for one."""
    tail_trips: list[Trip]

    @property
    def calls_as_text(self) -> bool:
        """The agent writes its calls in its replies: a text protocol seen, no tools offered."""
        return bool(self.state.protocol) and not self.levers.offered


def retry(turn: Turn, role: str, text: str, *, messages: list[Any] | None = None, **choice: Any) -> Edit:
    return Edit(
        messages=[*(turn.messages if messages is None else messages), {"role": role, "content": text}], **choice
    )


def held_retry(turn: Turn, role: str, text: str, call: Call | None, **more: Any) -> Edit | None:
    """The retry held to `call` (its tool, its arguments pinned in the call schema), when the
    request offers that tool; None otherwise."""
    if call is None or call.name not in turn.levers.offered:
        return None
    return retry(turn, role, text, tool_choice=call.name, pinned=call.arguments, **more)
