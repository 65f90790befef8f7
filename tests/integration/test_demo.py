"""`repair-proxy demo`: the timeline shows each trip on the right turn and ends with the hand-back."""

from __future__ import annotations

import asyncio

from proxy.cli.demo import demo


async def test_demo_timeline_trips_on_the_right_turns() -> None:
    """Nudge after the 3rd same failure (turn 5), force after the 5th (turn 9), hand-back after the 8th (turn 15)."""
    lines: list[str] = []
    handed_back_after = await asyncio.wait_for(demo(lines.append), 60)
    text = "\n".join(lines)
    assert handed_back_after == 15

    def after_turn(turn: int) -> str:
        start = text.index(f"turn {turn:2d} ")
        end = text.find(f"turn {turn + 1:2d} ", start)
        return text[start : end if end != -1 else len(text)]

    assert "TRIP stuck_same_diagnostic -> nudge" in after_turn(5)
    assert "TRIP stuck_same_diagnostic -> force" in after_turn(9)
    assert "folded: class=fail streak=3" in after_turn(5)
    assert all("TRIP" not in after_turn(t) for t in (1, 2, 3, 4, 6, 7, 8))
    assert "HAND-BACK" in after_turn(15) and "INCOMPLETE" in after_turn(15)
    assert '"same_diagnostic_streak":8' in after_turn(15)
