"""Write the shipped ALFWorld games: one PDDL problem per scene (``scenes.py``) for
ALFWorld's domain, and ``data/games.jsonl`` naming each game with its task type, goal
sentence and walkthrough. Rebuild with ``python -m reinforge.envs.alfworld.generate``.

Entity names follow ALFRED's mangling (``Cabinet_bar_01``; a basin is
``Sink_bar_00_bar_SinkBasin``) so that ALFWorld's ``AlfredDemangler`` shows them as
the official games show theirs (``cabinet 2``, ``sinkbasin 1``). The demangler
numbers the ids of one kind in reverse sorted order, so the ``n``-th of ``c`` gets
the suffix ``c - n``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from reinforge.envs.alfworld.scenes import OBJECT_TRAITS, OPENABLE, SCENES, Scene

DATA = Path(__file__).resolve().parent / "data"

#: types the domain's actions name (sink, microwave, fridge, knives): always declared
DOMAIN_RTYPES = ("SinkBasin", "Microwave", "Fridge")
DOMAIN_OTYPES = ("Knife", "ButterKnife")


def entity_id(kind: str, number: int, count: int) -> str:
    """The mangled id that ALFWorld's demangler shows as ``"<kind> <number>"``."""
    suffix = f"{count - number:02d}"
    if kind.endswith("Basin"):
        return f"{kind[: -len('Basin')]}_bar_{suffix}_bar_{kind}"
    return f"{kind}_bar_{suffix}"


def _numbered(kinds: list[str]) -> list[tuple[str, int, int]]:
    """``(kind, number, count)`` for each entry, numbered by order of appearance."""
    counts = Counter(kinds)
    seen: Counter[str] = Counter()
    out = []
    for kind in kinds:
        seen[kind] += 1
        out.append((kind, seen[kind], counts[kind]))
    return out


def _goal(scene: Scene) -> str:
    obj, recep = scene.args.get("obj"), scene.args.get("recep")
    if scene.task_type == "look_at_obj_in_light":
        lamp = scene.args["toggle"]
        return f"""(and
      (exists (?t - object ?r - receptacle ?a - agent ?l - location)
        (and (objectType ?t {lamp}Type) (toggleable ?t) (isToggled ?t)
             (inReceptacle ?t ?r) (receptacleAtLocation ?r ?l) (atLocation ?a ?l)))
      (exists (?o - object ?a - agent) (and (objectType ?o {obj}Type) (holds ?a ?o))))"""
    if scene.task_type == "pick_two_obj_and_place":
        return f"""(exists (?r - receptacle ?o1 - object ?o2 - object)
      (and (not (= ?o1 ?o2)) (receptacleType ?r {recep}Type)
           (objectType ?o1 {obj}Type) (inReceptacle ?o1 ?r)
           (objectType ?o2 {obj}Type) (inReceptacle ?o2 ?r)))"""
    state = {
        "pick_and_place_simple": "",
        "pick_clean_then_place_in_recep": "(cleanable ?o) (isClean ?o)",
        "pick_heat_then_place_in_recep": "(heatable ?o) (isHot ?o)",
        "pick_cool_then_place_in_recep": "(coolable ?o) (isCool ?o)",
    }[scene.task_type]
    return f"""(exists (?r - receptacle ?o - object)
      (and (inReceptacle ?o ?r) (objectType ?o {obj}Type) (receptacleType ?r {recep}Type)
           {state}))"""


def problem(scene: Scene) -> str:
    """The scene as a PDDL problem of ALFWorld's ``alfred`` domain."""
    receptacles = {}
    for kind, number, count in _numbered(list(scene.receptacles)):
        receptacles[f"{kind} {number}"] = (kind, entity_id(kind, number, count))
    location = {name: f"loc_{i + 1}" for i, name in enumerate(receptacles)}
    objects = []
    for (kind, number, count), (_, where) in zip(
        _numbered([k for k, _ in scene.objects]), scene.objects, strict=True
    ):
        if where not in receptacles:
            raise ValueError(f"{scene.name}: no receptacle {where!r}")
        objects.append((kind, entity_id(kind, number, count), where))
    rtypes = sorted({k for k, _ in receptacles.values()} | set(DOMAIN_RTYPES))
    otypes = sorted({k for k, _, _ in objects} | set(DOMAIN_OTYPES))
    start = "loc_0" if scene.start == "middle" else location[scene.start]

    init = [f"(atLocation agent1 {start})"]
    for name, (kind, rid) in receptacles.items():
        init += [
            f"(receptacleType {rid} {kind}Type)",
            f"(receptacleAtLocation {rid} {location[name]})",
        ]
        if kind in OPENABLE:
            init.append(f"(openable {rid})")
    for kind, oid, where in objects:
        rid = receptacles[where][1]
        init += [
            f"(objectType {oid} {kind}Type)",
            f"(inReceptacle {oid} {rid})",
            f"(objectAtLocation {oid} {location[where]})",
        ]
        traits = OBJECT_TRAITS.get(kind, ())
        if "toggleable" not in traits:
            init.append(f"(pickupable {oid})")
        init += [f"({trait} {oid})" for trait in traits]
    for rtype in rtypes:
        init += [f"(canContain {rtype}Type {otype}Type)" for otype in otypes]
    init.append("(= (total-cost) 0)")

    locations = " ".join(["loc_0", *location.values()])
    recs = " ".join(rid for _, rid in receptacles.values())
    objs = " ".join(oid for _, oid, _ in objects)
    lines = [
        f"(define (problem {scene.name})",
        "  (:domain alfred)",
        "  (:objects",
        "    agent1 - agent",
        f"    {locations} - location",
        f"    {recs} - receptacle",
        f"    {objs} - object",
        "    " + " ".join(f"{t}Type" for t in rtypes) + " - rtype",
        "    " + " ".join(f"{t}Type" for t in otypes) + " - otype",
        "  )",
        "  (:init",
        *(f"    {fact}" for fact in init),
        "  )",
        f"  (:goal {_goal(scene)})",
        "  (:metric minimize (total-cost))",
        ")",
        "",
    ]
    return "\n".join(lines)


def game_row(scene: Scene) -> dict:
    return {
        "name": scene.name,
        "task_type": scene.task_type,
        "goal": scene.goal,
        "split": scene.split,
        "problem": f"problems/{scene.name}.pddl",
        "walkthrough": list(scene.walkthrough),
    }


def main(out: Path = DATA) -> None:
    (out / "problems").mkdir(parents=True, exist_ok=True)
    with open(out / "games.jsonl", "w", encoding="utf-8") as index:
        for scene in SCENES:
            (out / "problems" / f"{scene.name}.pddl").write_text(problem(scene), encoding="utf-8")
            index.write(json.dumps(game_row(scene)) + "\n")
    print(f"wrote {len(SCENES)} games to {out}")


if __name__ == "__main__":
    main()
