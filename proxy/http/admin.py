"""The admin API: what the proxy knows about each team's conversations, behind a bearer token.

    GET    /admin/teams/{team}/conversations              repair state and last trips of each
    GET    /admin/teams/{team}/conversations/{id}         one conversation's timeline
    DELETE /admin/teams/{team}/conversations/{id}         forget its folded state
    GET    /admin/teams/{team}/verdicts                   the durable verdicts (cross-run memory)
    DELETE /admin/teams/{team}/verdicts/{task}            clear one

Tokens come from `[admin] tokens` in the config, each scoped to teams. With no token
configured every admin request is refused: the API is never on by default.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from proxy.engine.state import ConversationState
from proxy.engine.verdict import Verdict
from proxy.http.appkeys import RUNTIME, STORES
from proxy.http.replies import openai_error

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
        "last_trips": [{"pattern": t.pattern, "action": t.action.value, "turn": t.turn} for t in state.trips[-5:]],
    }


def _states(request: web.Request, team: str) -> dict[str, ConversationState]:
    runtime = request.app[RUNTIME].current
    if team not in runtime.teams:
        return {}
    return {conv: state for (t, conv), state in runtime.shared.cache.items() if t == team}


async def conversations(request: web.Request) -> web.Response:
    team = request.match_info["team"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    items = sorted(_states(request, team).items(), key=lambda kv: -kv[1].turns)
    return web.json_response({"team": team, "conversations": [_summary(c, s) for c, s in items]})


async def conversation(request: web.Request) -> web.Response:
    team, conv = request.match_info["team"], request.match_info["conversation"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    state = _states(request, team).get(conv)
    if state is None:
        return openai_error(404, f"no conversation {conv!r} in team {team!r}", code="not_found", kind="not_found_error")
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
        for e in state.timeline
    ]
    return web.json_response({**_summary(conv, state), "timeline": timeline})


async def reset_conversation(request: web.Request) -> web.Response:
    team, conv = request.match_info["team"], request.match_info["conversation"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    runtime = request.app[RUNTIME].current
    removed = team in runtime.teams and runtime.shared.cache.pop((team, conv)) is not None
    return web.json_response({"reset": removed})


async def verdicts(request: web.Request) -> web.Response:
    team = request.match_info["team"]
    if (refusal := _allowed(request, team)) is not None:
        return refusal
    store = request.app[STORES].verdicts
    found = await store.list(team) if store is not None else []
    return web.json_response({"team": team, "verdicts": [_verdict(v) for v in found]})


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
    if store is not None:
        await store.clear(team, task)
    return web.json_response({"cleared": store is not None})


def add_admin_routes(app: web.Application) -> None:
    app.router.add_get("/admin/teams/{team}/conversations", conversations)
    app.router.add_get("/admin/teams/{team}/conversations/{conversation}", conversation)
    app.router.add_delete("/admin/teams/{team}/conversations/{conversation}", reset_conversation)
    app.router.add_get("/admin/teams/{team}/verdicts", verdicts)
    app.router.add_delete("/admin/teams/{team}/verdicts/{task}", clear_verdict)
