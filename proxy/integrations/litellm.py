"""repair-proxy inside LiteLLM's proxy: the same engine, policy files and verdict store as
`repair-proxy serve`, as a LiteLLM callback, for a team that runs LiteLLM in front of its models
already (no second hop). In LiteLLM's `config.yaml`:

    litellm_settings:
      callbacks: proxy.integrations.litellm.handler

with repair-proxy importable where LiteLLM runs (installed in its environment, or on its
`PYTHONPATH`), and its settings read as `serve` reads them: a config file named by
`REPAIR_PROXY_CONFIG`, and the environment (`REPAIR_PROXY_POLICY`, `REPAIR_PROXY_VERDICTS`, ...).

Before the call (`async_pre_call_hook`): the request read in the dialect of LiteLLM's call type
(chat completions, Responses, Messages), folded into its conversation (per LiteLLM team), planned
with a prior attempt's verdict: the instruction placed, a tool forced, a tool taken away; a halt
(chat completions) is LiteLLM's rejection of the request, which it answers with as the
assistant's message. With nothing to say the request is LiteLLM's own, the same object, untouched. After the
call (`async_post_call_success_hook`): a whole chat reply that wrote its call as text gets it as a
real call. What needs generations of its own (the gates, the block rung) and a streamed reply's
salvage are `serve`'s reply stage only.

Fail-open: an exception here leaves the request, or the reply, as LiteLLM had it (logged).
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from proxy.dialects import ANTHROPIC, CHAT, RESPONSES, Dialect, Planned, parse
from proxy.engine.core import Engine, Folded
from proxy.engine.plan.reply import judge
from proxy.engine.state.cache import StateCache
from proxy.engine.text.tokens import TokenCounter
from proxy.settings.config import Settings, load_settings
from proxy.settings.policy import is_preset_name, load_policy
from proxy.store import VerdictStore, open_store

__all__ = ["CALL_TYPES", "RepairCallback"]  # and `handler` (`__getattr__`)

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError:  # no LiteLLM here: the module still imports (the package's checks walk every module)
    CustomLogger = object

log = logging.getLogger("repair_proxy.litellm")

CALL_TYPES: Mapping[str, Dialect] = {
    "completion": CHAT,
    "acompletion": CHAT,
    "responses": RESPONSES,
    "aresponses": RESPONSES,
    "anthropic_messages": ANTHROPIC,
}
"""LiteLLM's call types the callback reads, and the dialect each request body is in."""
READ = (
    "model", "messages", "input", "instructions", "previous_response_id", "system", "tools", "tool_choice",
    "stream", "thinking", "response_format", "text", "format", "seed",
)  # fmt: skip
"""The members of LiteLLM's request data a dialect reads or writes (the rest is LiteLLM's own:
its logging objects, metadata, the proxy's request)."""
KEPT = 1024
"""Decisions kept for the replies to come (by LiteLLM's call id; the oldest go first)."""


class RepairCallback(CustomLogger):  # type: ignore[misc]
    """The engine as a LiteLLM callback (`handler` is the one LiteLLM's config names)."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__()
        self.settings = settings or load_settings(os.environ.get("REPAIR_PROXY_CONFIG") or None, environ=os.environ)
        store = self.settings.store
        cache = StateCache[Any](store.state_cache_size, store.state_ttl_seconds)
        self.engine = Engine(load_policy(_policy_path(self.settings)), cache, TokenCounter())
        self.store: VerdictStore | None = open_store(store.verdicts)
        self._planned: dict[str, Planned] = {}

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any] | Exception:
        dialect = CALL_TYPES.get(str(call_type))
        if dialect is None or not self.settings.repair.enabled:
            return data
        try:
            return await self._before(data, dialect, getattr(user_api_key_dict, "team_id", None) or "default")
        except Exception:
            log.exception("repair-proxy: analysis failed; the request goes as it came")
            return data

    async def _before(self, data: dict[str, Any], dialect: Dialect, team: str) -> dict[str, Any] | Exception:
        view = {key: data[key] for key in READ if key in data}
        incoming = parse(dialect, orjson.dumps(view))
        if incoming is None:
            return data  # not a transcript the engine reads
        asked = self.engine.request(incoming.translation, _headers(data), team)
        folded = self.engine.fold(asked)
        planned = Planned.of(incoming, await self._plan(folded))
        decision = planned.decision
        if decision.halt is not None and dialect is CHAT:
            return _rejected(decision.halt.text, data)  # LiteLLM answers with it, as the model's message
        call_id = data.get("litellm_call_id")
        if isinstance(call_id, str) and decision.reply.offered:
            self._planned[call_id] = planned
            while len(self._planned) > KEPT:
                self._planned.pop(next(iter(self._planned)))
        if decision.edit is None:
            return data
        edited = orjson.loads(planned.body)
        for key in READ:
            if key in edited:
                data[key] = edited[key]
            elif key in view:
                del data[key]  # taken out by the edit (a tool_choice naming a tool taken away)
        return data

    async def _plan(self, folded: Folded) -> Any:
        """The decision, with the task's verdict from the store when memory is due; a stall
        recorded, a pass clearing it (store trouble: on without memory)."""
        request, store, prior = folded.request, self.store, None
        asked = store is not None and folded.memory_due
        if store is not None and asked:
            try:
                prior = await store.get(request.team, request.task)
            except Exception:
                log.exception("repair-proxy: the verdict store failed; on without memory")
                asked = False
        decision = self.engine.plan(folded, prior, asked=asked)
        effects = decision.effects
        if store is not None and (effects.record_verdict or effects.clear_verdict):
            try:
                if effects.record_verdict:
                    await store.put(decision.verdict(time.time()))
                else:
                    await store.clear(request.team, request.task)
            except Exception:
                log.exception("repair-proxy: the verdict store failed; the verdict is not kept")
        return decision

    async def async_post_call_success_hook(self, data: dict[str, Any], user_api_key_dict: Any, response: Any) -> Any:
        planned = self._planned.pop(str(data.get("litellm_call_id")), None)
        if planned is None or planned.incoming.dialect is not CHAT:
            return response
        try:
            return _salvaged(planned, response)
        except Exception:
            log.exception("repair-proxy: the reply could not be read; it goes as it came")
            return response


def _policy_path(settings: Settings) -> str:
    """The policy as `serve` finds it: a preset by name, a path relative to the config file."""
    path = settings.repair.policy
    if not path or is_preset_name(path) or Path(path).is_absolute():
        return path
    return str(settings.base_of("repair.policy") / path)


def _headers(data: Mapping[str, Any]) -> Mapping[str, str]:
    """The agent's request headers, as LiteLLM's proxy keeps them (`X-Repair-Task` and
    `X-Repair-Conversation` are read from them)."""
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, dict) else None
    return {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}


def _rejected(text: str, data: dict[str, Any]) -> Exception:
    """The hand-back as LiteLLM's rejection of a chat request, which its proxy answers with a chat
    completion (streamed when the request streams) whose message is `text`: returned, not raised,
    as its pre-call hooks' contract has it (a plain string is that only for its `completion` call
    type; its chat route's is `acompletion`, where a string is a 400)."""
    from litellm.exceptions import RejectedRequestError  # noqa: PLC0415 - LiteLLM's, where the callback runs

    return RejectedRequestError(message=text, model=str(data.get("model") or ""), llm_provider="", request_data=data)  # type: ignore[no-any-return]


def _salvaged(planned: Planned, response: Any) -> Any:
    """A whole chat reply whose call was written as text, as a reply with the call; else None
    (LiteLLM keeps its own)."""
    from litellm import ModelResponse  # noqa: PLC0415 - LiteLLM's, where the callback runs

    if not isinstance(response, ModelResponse):
        return None
    body = orjson.dumps(response.model_dump())
    view = CHAT.read_reply(body)
    calls = judge(view, planned.decision.reply).salvaged if view is not None else None
    if not calls:
        return None
    ids = [f"call_rp{secrets.token_hex(8)}_{i}" for i in range(len(calls))]
    return ModelResponse(**orjson.loads(CHAT.salvaged(body, calls, ids)))


@functools.cache
def _handler() -> RepairCallback:
    return RepairCallback()


def __getattr__(name: str) -> Any:
    """`handler`, the callback LiteLLM's config names (`callbacks: proxy.integrations.litellm.handler`):
    made when LiteLLM first asks for it, on the settings of that moment; importing reads nothing."""
    if name == "handler":
        return _handler()
    raise AttributeError(name)
