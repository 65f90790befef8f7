"""The admin API: what the proxy knows about each team's conversations, behind a bearer token.

    GET    /admin/teams/{team}/conversations              repair state and last trips of each
    GET    /admin/teams/{team}/conversations/{id}         one conversation's timeline
    DELETE /admin/teams/{team}/conversations/{id}         forget its folded state
    GET    /admin/teams/{team}/verdicts                   the durable verdicts (cross-run memory)
    DELETE /admin/teams/{team}/verdicts/{task}            clear one

Tokens come from `[admin] tokens` in the config, each scoped to teams. With no token
configured every admin request is refused: the API is never on by default.

With several workers, the conversation views cover every worker: the one that answers asks
the others (`proxy.http.serving.workers.ask_siblings`) and keeps, for each conversation, the fold that
has seen the most turns; a reset reaches every worker.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from proxy.engine.state.conversation import ConversationState
from proxy.engine.state.verdict import Verdict
from proxy.http.runtime.appkeys import RUNTIME, STORES, WORKER
from proxy.http.serving.workers import SIBLING_HEADER, ask_siblings
from proxy.http.upstream.replies import openai_error

__all__ = ["add_admin_routes"]


def _allowed(request: web.Request, team: str) -> web.Response | None:
    """None when the bearer token may see `team`; else the refusal to send."""
    tokens = request.app[RUNTIME].current.settings.admin.tokens
    header = request.headers.get("Authorization", "")
    given = header[7:].strip() if header[:7].lower() == "bearer " else ""
    match = next((t for t in tokens if given and t.token == given), None)
    if match is None:
        message = "the admin API needs a valid admin token (Authorization: Bearer ...)"
        return openai_error(401, message, code="admin_unauthorized", kind="authentication_error")
    if "*" not in match.teams and team not in match.teams:
        message = f"this admin token is not scoped to team {team!r}"
        return openai_error(403, message, code="admin_forbidden", kind="permission_error")
    return None


def _summary(conversation: str, state: ConversationState) -> dict[str, Any]:
    return {
        "conversation": conversation,
        "turns": state.turns,
        "state": state.repair.as_dict(),
        "current_failure": state.repair.current_failure(),
        "last_trips": [
            {"pattern": t.pattern.name, "action": t.action.value, "shadow": t.shadow, "turn": t.turn}
            for t in state.trips[-5:]
        ],
    }


LISTED = 200
"""Conversations a listing shows per worker: the most recently active (states beyond the live
ones are kept packed, and a listing unpacks each one it shows)."""


def _states(request: web.Request, team: str) -> dict[str, ConversationState]:
    """The team's most recently active conversations in this worker's cache."""
    runtime = request.app[RUNTIME].current
    if team not in runtime.teams:
        return {}
    return {conv: state for (_t, conv), state in runtime.shared.cache.items(first=team, newest=LISTED)}


def _state(request: web.Request, team: str, conversation: str) -> ConversationState | None:
    runtime = request.app[RUNTIME].current
    return runtime.shared.cache.peek((team, conversation)) if team in runtime.teams else None


async def _siblings(request: web.Request) -> list[Any]:
    """The other workers' answers to this same request ([] for the only worker, or when asked
    by a sibling)."""
    if SIBLING_HEADER in request.headers:
        return []
    authorization = request.headers.get("Authorization", "")
    return await ask_siblings(request.app[WORKER], request.method, request.path_qs, authorization)


def _most_turns(views: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per conversation, the view of the worker that has folded the most of it."""
    best: dict[str, dict[str, Any]] = {}
    for view in views:
        kept = best.get(view["conversation"])
        if kept is None or view["turns"] > kept["turns"]:
            best[view["conversation"]] = view
    return best


async def conversations(request: web.Request) -> web.Response:
    team = request.match_info["team"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    views = [_summary(c, s) for c, s in _states(request, team).items()]
    views += [v for answer in await _siblings(request) for v in answer["conversations"]]
    merged = sorted(_most_turns(views).values(), key=lambda v: -v["turns"])
    return web.json_response({"team": team, "conversations": merged})


async def conversation(request: web.Request) -> web.Response:
    team, conv = request.match_info["team"], request.match_info["conversation"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    state = _state(request, team, conv)
    views = [] if state is None else [_timeline(conv, state)]
    views += await _siblings(request)
    if not views:
        return openai_error(404, f"no conversation {conv!r} in team {team!r}", code="not_found", kind="not_found_error")
    return web.json_response(_most_turns(views)[conv])


def _timeline(conv: str, state: ConversationState) -> dict[str, Any]:
    injected: dict[int, list[str]] = {}
    for injection in state.injections:
        injected.setdefault(injection.turn, []).append(injection.text)
    timeline = [
        {
            "turn": e.turn,
            "calls": list(e.calls),
            "outcome": e.outcome,
            "signature": e.signature,
            "streak": e.streak,
            "trips": list(e.trips),
            "injected": injected.get(e.turn, []),
        }
        for e in state.entries()
    ]
    return {**_summary(conv, state), "timeline": timeline}


async def reset_conversation(request: web.Request) -> web.Response:
    team, conv = request.match_info["team"], request.match_info["conversation"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    runtime = request.app[RUNTIME].current
    removed = team in runtime.teams and runtime.shared.cache.pop((team, conv)) is not None
    removed = any([removed, *(answer["reset"] for answer in await _siblings(request))])
    return web.json_response({"reset": removed})


async def verdicts(request: web.Request) -> web.Response:
    team = request.match_info["team"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    store = request.app[STORES].verdicts
    try:
        found = await store.list(team) if store is not None else []
    except Exception:
        return _store_failing(request)
    return web.json_response({"team": team, "verdicts": [_verdict(v) for v in found]})


def _store_failing(request: web.Request) -> web.Response:
    """The verdict store failed this admin request: 503, saying why (agents' requests go on
    without memory meanwhile; see `proxy.store.health`)."""
    health = request.app[STORES].health
    message = f"the verdict store ({health.backend}) is failing: {health.error}; requests go on without memory"
    return openai_error(503, message, code="store_failing", kind="server_error")


def _verdict(v: Verdict) -> dict[str, Any]:
    return {
        "task": v.task,
        "conversation": v.conversation,
        "failing_class": v.failing_class,
        "signature": v.signature,
        "snippet": v.snippet,
        "streak": v.streak,
        "edits_unchanged": v.edits_unchanged,
        "patterns": list(v.patterns),
        "written_at": v.written_at,
    }


async def clear_verdict(request: web.Request) -> web.Response:
    team, task = request.match_info["team"], request.match_info["task"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    store = request.app[STORES].verdicts
    try:
        if store is not None:
            await store.clear(team, task)
    except Exception:
        return _store_failing(request)
    return web.json_response({"cleared": store is not None})


def add_admin_routes(app: web.Application) -> None:
    app.router.add_get("/admin/teams/{team}/conversations", conversations)
    app.router.add_get("/admin/teams/{team}/conversations/{conversation}", conversation)
    app.router.add_delete("/admin/teams/{team}/conversations/{conversation}", reset_conversation)
    app.router.add_get("/admin/teams/{team}/verdicts", verdicts)
    app.router.add_delete("/admin/teams/{team}/verdicts/{task}", clear_verdict)
