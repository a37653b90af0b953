"""Crafter's placing, crafting and sleeping as primitive skills: one harness action each, with
the preconditions and effects a symbolic planner regresses over, judged by their effects
(polar.skills.runner: success = every effect holds after the action and one of them is new).

They are generated from Crafter's own rules (`crafter.constants`: `place` and `make` in its
data.yaml), so a precondition cannot drift from the game: placing needs the materials it
`uses` and a faced cell it may go on (`can_place(NAME)`); making a tool needs what it `uses`
and the `nearby` stations within the 3x3 cells around the player (`near(table)`).
What a primitive uses up is declared too (`uses: [has(wood,2)]`), so a planner collects enough
for the next recipe before placing the table that eats into it.
Collecting, eating, drinking and fighting act through `do` on what the player faces and are
the learned skills' part, not primitives.
"""

from __future__ import annotations

from polar.skills.model import Skill

CRAFTER = ["crafter:*"]
_PLACED_VIEW = {"plant": "sapling"}  # how a placed thing shows in the view (a fresh plant: a sapling)


def _uses(uses: dict[str, int]) -> list[str]:
    return [f"has({item},{n})" for item, n in uses.items()]


def _words(uses: dict[str, int]) -> str:
    return ", ".join(f"{n} {item}" for item, n in uses.items())


def primitive_skills() -> list[Skill]:
    """place_*, make_* and sleep, with Crafter's requirements as preconditions."""
    import crafter

    out = []
    for name, rule in crafter.constants.place.items():
        shown = _PLACED_VIEW.get(name, name)
        out.append(Skill(
            name=f"place_{name}", kind="primitive", action=f"place_{name}", harnesses=CRAFTER,
            description=f"Place a {name} on the faced cell ({', '.join(rule['where'])}, with nothing on it). "
                        f"One action; uses {_words(rule['uses'])}.",
            preconditions=[*_uses(rule["uses"]), f"can_place({name})"],
            effects=[f"facing({shown})", f"near({shown})", f"achieved(place_{name})"],
            uses=_uses(rule["uses"]), step_budget=1,
        ))
    for name, rule in crafter.constants.make.items():
        out.append(Skill(
            name=f"make_{name}", kind="primitive", action=f"make_{name}", harnesses=CRAFTER,
            description=f"Make a {name.replace('_', ' ')} with {_words(rule['uses'])}, standing next to "
                        f"a {' and a '.join(rule['nearby'])} (within the 3x3 cells around you). One action.",
            preconditions=[*_uses(rule["uses"]), *(f"near({station})" for station in rule["nearby"])],
            effects=[f"has({name})", f"achieved(make_{name})"],
            uses=_uses(rule["uses"]), step_budget=1,
        ))
    out.append(Skill(
        name="sleep", kind="primitive", action="sleep", harnesses=CRAFTER,
        description="Fall asleep (energy below its maximum); the player sleeps until energy is full "
                    "and then wakes up (achievement wake_up). Zombies hit a sleeper harder.",
        preconditions=["not full(energy)"], effects=["asleep"], step_budget=1,
    ))
    return out
