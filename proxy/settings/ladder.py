"""What every pattern's table has: a threshold and what happens as its count climbs.

A pattern with options of its own declares a subclass of `Ladder` in its detector file; a
policy's `[patterns.<name>]` table is validated against it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from proxy.settings.kinds import Action, Mode

__all__ = ["Frozen", "Ladder", "Rung"]


class Frozen(BaseModel):
    """A settings model: frozen, and no key it does not know."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Rung(Frozen):
    at: int = Field(ge=1)
    action: Action


class Ladder(Frozen):
    """A pattern's threshold and what happens as its count climbs: the settings every pattern
    has. A pattern with options of its own declares a subclass of it in its detector file."""

    after: int = Field(ge=1)
    action: Action = Action.NUDGE
    escalate: tuple[Rung, ...] = ()
    mode: Mode = Mode.ACT
    """`act`, or `shadow`: the pattern trips, logs and counts, and changes nothing (each pattern's
    default is set by its measured precision on agents its rules were not written against)."""
    confirm: int = Field(default=0, ge=0)
    """Counts past `after` that must confirm the loop before the pattern acts: its first detection,
    at `after`, is silent (an `observe` trip: logged and counted, nothing said), and it speaks only
    when the agent's next steps repeat the shape again; every rung then stands `confirm` higher.
    The step it asks for is then never one the agent had already turned to by itself."""

    @model_validator(mode="after")
    def _rising(self) -> Ladder:
        counts = [self.after, *(r.at for r in self.escalate)]
        if counts != sorted(set(counts)):
            raise ValueError("escalate counts must rise above `after`, each once")
        return self

    @property
    def counts(self) -> tuple[int, ...]:
        """The counts its rungs stand at, lowest first (the silent detection first, when confirmed)."""
        shift = self.confirm
        acting = (self.after + shift, *(r.at + shift for r in self.escalate))
        return (self.after, *acting) if shift else acting

    def above(self, count: int) -> Action | None:
        """The action of the first rung above `count`: what a rung that cannot act gives way to
        (a `restrict` with no tool to take away); None above the last."""
        return next((self.action_at(at) for at in self.counts if at > count), None)

    def action_at(self, count: int) -> Action | None:
        """The action of the rung at exactly `count`; None between rungs. With `confirm`, the
        detection at `after` only observes and the rungs stand `confirm` higher."""
        if self.confirm:
            if count == self.after:
                return Action.OBSERVE
            count -= self.confirm
        if count == self.after:
            return self.action
        return next((rung.action for rung in self.escalate if rung.at == count), None)
