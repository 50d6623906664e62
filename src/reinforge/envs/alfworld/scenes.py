"""The shipped ALFWorld games, as small household scenes (generated into ``data/`` by
``generate.py``).

The official games (3,553 train / 274 test) come from ``alfworld-download``, which this
project cannot reach; these fifteen cover the six ALFWorld task types with two or
three scenes each, written for ALFWorld's own PDDL domain and text grammar (the
``alfworld`` package ships both), so the real TextWorld engine plays them exactly as
it plays the official ones.

A scene lists its receptacles (``"Cabinet"`` is cabinet 1, a second ``"Cabinet"``
cabinet 2, ...; openable ones are closed at the start), its objects (type and the
receptacle they start in), the goal (task type and its arguments) and a walkthrough:
the commands that win, checked against the engine by the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: receptacle types that are opened and closed
OPENABLE = {"Cabinet", "Drawer", "Fridge", "Microwave", "Safe"}

#: what each object type can undergo (every object but a lamp can be picked up)
OBJECT_TRAITS: dict[str, tuple[str, ...]] = {
    "Apple": ("cleanable", "heatable", "coolable"),
    "Bread": ("heatable", "coolable"),
    "Egg": ("heatable", "coolable"),
    "Potato": ("cleanable", "heatable", "coolable"),
    "Tomato": ("cleanable", "heatable", "coolable"),
    "Lettuce": ("cleanable", "coolable"),
    "Mug": ("cleanable", "heatable", "coolable"),
    "Cup": ("cleanable", "heatable", "coolable"),
    "Plate": ("cleanable", "heatable", "coolable"),
    "Pan": ("cleanable", "coolable"),
    "Cloth": ("cleanable",),
    "SoapBar": ("cleanable",),
    "Fork": ("cleanable",),
    "Spoon": ("cleanable",),
    "Knife": ("cleanable",),
    "Spatula": ("cleanable",),
    "DeskLamp": ("toggleable",),
    "FloorLamp": ("toggleable",),
}

#: the goal sentence of each task type (ALFWorld's templated goals)
GOAL_TEXT = {
    "pick_and_place_simple": "put some {obj} on {recep}",
    "look_at_obj_in_light": "look at {obj} under the {toggle}",
    "pick_clean_then_place_in_recep": "put a clean {obj} in {recep}",
    "pick_heat_then_place_in_recep": "heat some {obj} and put it in {recep}",
    "pick_cool_then_place_in_recep": "cool some {obj} and put it in {recep}",
    "pick_two_obj_and_place": "put two {obj} in {recep}",
}

TASK_TYPES = tuple(GOAL_TEXT)


@dataclass(frozen=True)
class Scene:
    name: str
    task_type: str
    receptacles: tuple[str, ...]
    objects: tuple[tuple[str, str], ...]  # (object type, "receptacle type N")
    args: dict[str, str]  # obj / recep / toggle: ALFRED type names
    walkthrough: tuple[str, ...]
    start: str = "middle"  # "middle" of the room, or "receptacle type N" to start beside it
    split: str = "train"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def goal(self) -> str:
        words = {k: v.lower() for k, v in self.args.items()}
        return GOAL_TEXT[self.task_type].format(**words)


def _s(name: str, task: str, recs: str, objs: str, args: str, walk: str, **kw: str) -> Scene:
    """A scene from compact text: ``recs`` and ``objs`` are comma-separated (an object
    is ``Type@Receptacle N``), ``args`` is ``key=Type`` pairs, ``walk`` is ``;``-separated."""
    objects = tuple(tuple(o.strip().split("@")) for o in objs.split(","))
    return Scene(
        name=name,
        task_type=task,
        receptacles=tuple(r.strip() for r in recs.split(",")),
        objects=objects,  # type: ignore[arg-type]
        args=dict(a.split("=") for a in args.split()),
        walkthrough=tuple(w.strip() for w in walk.split(";")),
        **kw,
    )


SCENES: tuple[Scene, ...] = (
    # ---- pick and place -----------------------------------------------------------------
    _s(
        "pick_and_place_simple-0",
        "pick_and_place_simple",
        "Cabinet, Cabinet, CounterTop, Toilet, SinkBasin, GarbageCan",
        "SprayBottle@Cabinet 2, SoapBar@CounterTop 1, Cloth@Cabinet 1, Candle@Toilet 1",
        "obj=SprayBottle recep=Toilet",
        "go to cabinet 2; open cabinet 2; take spraybottle 1 from cabinet 2; go to toilet 1;"
        " move spraybottle 1 to toilet 1",
    ),
    _s(
        "pick_and_place_simple-1",
        "pick_and_place_simple",
        "Desk, Drawer, Drawer, Shelf, Bed, GarbageCan",
        "Pen@Drawer 2, Pencil@Desk 1, Book@Bed 1, CD@Shelf 1",
        "obj=Pen recep=Shelf",
        "go to drawer 2; open drawer 2; take pen 1 from drawer 2; go to shelf 1;"
        " move pen 1 to shelf 1",
    ),
    _s(
        "pick_and_place_simple-2",
        "pick_and_place_simple",
        "Sofa, CoffeeTable, SideTable, ArmChair, Dresser",
        "RemoteControl@CoffeeTable 1, KeyChain@SideTable 1, Pillow@Sofa 1, Watch@Dresser 1",
        "obj=KeyChain recep=ArmChair",
        "go to sidetable 1; take keychain 1 from sidetable 1; go to armchair 1;"
        " move keychain 1 to armchair 1",
        split="test",
    ),
    # ---- look at an object under a lamp -------------------------------------------------
    _s(
        "look_at_obj_in_light-0",
        "look_at_obj_in_light",
        "Desk, SideTable, Bed, Drawer, Shelf",
        "Book@Bed 1, DeskLamp@Desk 1, CellPhone@SideTable 1, Pen@Shelf 1",
        "obj=Book toggle=DeskLamp",
        "go to bed 1; take book 1 from bed 1; go to desk 1; use desklamp 1",
    ),
    _s(
        "look_at_obj_in_light-1",
        "look_at_obj_in_light",
        "SideTable, SideTable, Dresser, Drawer, ArmChair",
        "CD@Drawer 1, DeskLamp@SideTable 2, KeyChain@Dresser 1, Watch@SideTable 1",
        "obj=CD toggle=DeskLamp",
        "go to drawer 1; open drawer 1; take cd 1 from drawer 1; go to sidetable 2; use desklamp 1",
    ),
    _s(
        "look_at_obj_in_light-2",
        "look_at_obj_in_light",
        "Sofa, CoffeeTable, SideTable, Shelf",
        "Pillow@Sofa 1, FloorLamp@SideTable 1, Vase@Shelf 1, CreditCard@CoffeeTable 1",
        "obj=CreditCard toggle=FloorLamp",
        "go to coffeetable 1; take creditcard 1 from coffeetable 1; go to sidetable 1;"
        " use floorlamp 1",
        split="test",
    ),
    # ---- clean, then place --------------------------------------------------------------
    _s(
        "pick_clean_then_place_in_recep-0",
        "pick_clean_then_place_in_recep",
        "CounterTop, Cabinet, SinkBasin, Drawer, Fridge",
        "Fork@CounterTop 1, Spoon@Drawer 1, Plate@Cabinet 1, Apple@Fridge 1",
        "obj=Fork recep=Drawer",
        "go to countertop 1; take fork 1 from countertop 1; go to sinkbasin 1;"
        " clean fork 1 with sinkbasin 1; go to drawer 1; open drawer 1; move fork 1 to drawer 1",
    ),
    _s(
        "pick_clean_then_place_in_recep-1",
        "pick_clean_then_place_in_recep",
        "Cabinet, Cabinet, CounterTop, SinkBasin, Toilet, TowelHolder",
        "Cloth@Cabinet 1, SoapBar@SinkBasin 1, SprayBottle@Cabinet 2, Candle@CounterTop 1",
        "obj=Cloth recep=CounterTop",
        "go to cabinet 1; open cabinet 1; take cloth 1 from cabinet 1; go to sinkbasin 1;"
        " clean cloth 1 with sinkbasin 1; go to countertop 1; move cloth 1 to countertop 1",
    ),
    _s(
        "pick_clean_then_place_in_recep-2",
        "pick_clean_then_place_in_recep",
        "CounterTop, CounterTop, DiningTable, SinkBasin, Microwave, Fridge",
        "Mug@DiningTable 1, Tomato@CounterTop 2, Knife@CounterTop 1, Egg@Fridge 1",
        "obj=Mug recep=CounterTop",
        "go to diningtable 1; take mug 1 from diningtable 1; go to sinkbasin 1;"
        " clean mug 1 with sinkbasin 1; go to countertop 1; move mug 1 to countertop 1",
        split="test",
    ),
    # ---- heat, then place ---------------------------------------------------------------
    _s(
        "pick_heat_then_place_in_recep-0",
        "pick_heat_then_place_in_recep",
        "CounterTop, Fridge, Microwave, DiningTable, StoveBurner, SinkBasin",
        "Egg@Fridge 1, Bread@CounterTop 1, Fork@DiningTable 1, Pan@StoveBurner 1",
        "obj=Egg recep=DiningTable",
        "go to fridge 1; open fridge 1; take egg 1 from fridge 1; go to microwave 1;"
        " heat egg 1 with microwave 1; go to diningtable 1; move egg 1 to diningtable 1",
    ),
    _s(
        "pick_heat_then_place_in_recep-1",
        "pick_heat_then_place_in_recep",
        "CounterTop, CounterTop, Cabinet, Microwave, Fridge, GarbageCan",
        "Potato@GarbageCan 1, Apple@CounterTop 2, Cup@Cabinet 1, Spatula@CounterTop 1",
        "obj=Potato recep=CounterTop",
        "go to garbagecan 1; take potato 1 from garbagecan 1; go to microwave 1;"
        " heat potato 1 with microwave 1; go to countertop 1; move potato 1 to countertop 1",
    ),
    _s(
        "pick_heat_then_place_in_recep-2",
        "pick_heat_then_place_in_recep",
        "Cabinet, CounterTop, Microwave, Fridge, DiningTable",
        "Plate@Cabinet 1, Lettuce@Fridge 1, Spoon@CounterTop 1, Mug@DiningTable 1",
        "obj=Plate recep=Cabinet",
        "go to cabinet 1; open cabinet 1; take plate 1 from cabinet 1; go to microwave 1;"
        " heat plate 1 with microwave 1; go to cabinet 1; move plate 1 to cabinet 1",
        split="test",
    ),
    # ---- cool, then place ---------------------------------------------------------------
    _s(
        "pick_cool_then_place_in_recep-0",
        "pick_cool_then_place_in_recep",
        "CounterTop, Fridge, Microwave, DiningTable, Cabinet",
        "Apple@DiningTable 1, Bread@CounterTop 1, Cup@Cabinet 1, Egg@Microwave 1",
        "obj=Apple recep=CounterTop",
        "go to diningtable 1; take apple 1 from diningtable 1; go to fridge 1;"
        " cool apple 1 with fridge 1; go to countertop 1; move apple 1 to countertop 1",
    ),
    _s(
        "pick_cool_then_place_in_recep-1",
        "pick_cool_then_place_in_recep",
        "CounterTop, CounterTop, Fridge, StoveBurner, Cabinet",
        "Pan@StoveBurner 1, Tomato@CounterTop 1, Plate@Cabinet 1, Knife@CounterTop 2",
        "obj=Pan recep=Cabinet",
        "go to stoveburner 1; take pan 1 from stoveburner 1; go to fridge 1;"
        " cool pan 1 with fridge 1; go to cabinet 1; open cabinet 1; move pan 1 to cabinet 1",
    ),
    _s(
        "pick_cool_then_place_in_recep-2",
        "pick_cool_then_place_in_recep",
        "CounterTop, Fridge, DiningTable, SinkBasin",
        "Lettuce@CounterTop 1, Mug@SinkBasin 1, Bread@DiningTable 1, Fork@CounterTop 1",
        "obj=Lettuce recep=DiningTable",
        "go to countertop 1; take lettuce 1 from countertop 1; go to fridge 1;"
        " cool lettuce 1 with fridge 1; go to diningtable 1; move lettuce 1 to diningtable 1",
        split="test",
    ),
    # ---- two of a kind ------------------------------------------------------------------
    _s(
        "pick_two_obj_and_place-0",
        "pick_two_obj_and_place",
        "Dresser, SideTable, Drawer, Bed, GarbageCan",
        "CellPhone@Bed 1, CellPhone@Drawer 1, Watch@Dresser 1, Pen@SideTable 1",
        "obj=CellPhone recep=Dresser",
        "go to bed 1; take cellphone 1 from bed 1; go to dresser 1;"
        " move cellphone 1 to dresser 1; go to drawer 1; open drawer 1;"
        " take cellphone 2 from drawer 1; go to dresser 1; move cellphone 2 to dresser 1",
    ),
    _s(
        "pick_two_obj_and_place-1",
        "pick_two_obj_and_place",
        "CounterTop, Cabinet, Cabinet, Toilet, SinkBasin",
        "SoapBar@Toilet 1, SoapBar@CounterTop 1, Cloth@Cabinet 2, SprayBottle@Cabinet 1",
        "obj=SoapBar recep=Cabinet",
        "go to toilet 1; take soapbar 1 from toilet 1; go to cabinet 1; open cabinet 1;"
        " move soapbar 1 to cabinet 1; go to countertop 1; take soapbar 2 from countertop 1;"
        " go to cabinet 1; move soapbar 2 to cabinet 1",
        split="test",
    ),
)
