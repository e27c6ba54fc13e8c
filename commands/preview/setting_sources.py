"""The stack settings behind a change, followed through the one config-to-Args mapping
(`stacks/args.py`) and the components themselves, never written out by hand.

* Settings -> Args fields: each component's Args are built from a config seen through a recorder,
  which notes every setting the mapping reads by its stack-file key (`routing.serviceName`); then
  they are built again with that one setting set to other values, and the fields that change are
  the ones it feeds. Followed from a few configs (`TRACED_SETTINGS`), their union kept, so that a
  setting read on one branch only (the Gateway's proxy-only subnet in the network policies) counts.
  A setting for which no other value builds is taken to feed every field.
* Args fields -> inputs: the component is declared under the offline engine's mocks with those Args
  and with one field changed, once per layout the traced configs give it (one `vllm` container, or
  one per rank); the children's inputs that change are the ones the field feeds. An input is placed
  by what its list items are, not where they sit (`containers[vllm-3].args[--max-num-seqs]`), so
  what one layout teaches holds in another and wherever a flag left out moves the later ones.
* A change -> settings: the resource belongs to the innermost component around it that the mapping
  builds Args for (the endpoint picker's resources to the Gateway, which builds the picker's Args),
  or is itself a provider built from the config. Its candidates are that component's settings less
  those of every component that did not change at all; of them, the ones whose fields feed the
  changed inputs (for a created or deleted resource: its name) are named. When both renders recorded
  their settings' digests, only settings that differ between them are named.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import gc
import inspect
import json
import logging
import re
import string
import threading
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, ParamSpec, TypeVar

import pulumi
from pulumi.runtime.settings import reset_options
from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from commands.engine import mocks
from commands.engine.property_paths import Segment, parse_path
from commands.engine.secrets import CIPHERTEXT, FROM_ESC, UNSET, shown_kind
from commands.io.states import Record, RenderStates, setting_digests, switched_on_by
from commands.preview.args_of_config import ARGS_OF_CONFIG, PROVIDER_ARGS_OF_CONFIG
from commands.preview.changes import ResourceChange, value_at
from commands.preview.traced_table import current_table
from commands.stackfile.stack_settings import StackSettings
from stacks import program
from stacks.capacity import measurements
from stacks.config.presets import PRESETS
from stacks.config.stack import StackConfig
from stacks.load.loader import validate

P = ParamSpec("P")
R = TypeVar("R")
# The offline engine's stack for declaring the composition and single components from traced Args.
COMPONENT_SETTINGS = StackSettings(project="preview", stack="fields", config={}, secret_keys=[], placeholders=[])
# The configs the mapping is followed from: dev (ClusterIP routing, a business-hours schedule),
# staging (the Gateway, autoscaling), one on prod's sources (Flex-start, then Spot) with neither
# autoscaling nor a schedule, and dev with a schedule of cron entries (an empty list of entries has no
# other value that builds: only a list with entries shows what they feed), the benchmark and the compile
# cache (what a switch turns on inside a component that is there either way: the time-to-ready metric,
# the cache's volumes on the serving pods).
TRACED_SETTINGS: tuple[dict[str, Any], ...] = (
    {"environment": "dev", "project": "traced-project"},
    {"environment": "staging", "project": "traced-project"},
    {
        "environment": "staging",
        "project": "traced-project",
        # the Gateway's HTTPS listener and reserved address, off in every preset
        "routing": {
            "gateway": {
                "tls": {"hostname": "traced.example.com", "preSharedCertificate": "traced"},
                "address": "traced",
            }
        },
    },
    {
        "environment": "dev",
        "project": "traced-project",
        "capacity": {"nodes": 2, "sources": PRESETS["prod"]["capacity"]["sources"]},
        "schedule": {"enabled": False},
        # the branches the presets leave off: the KV-cache metric and the internal load balancer
        "autoscaling": {"enabled": True, "metric": "kvCacheUsage"},
        "routing": {"internalLoadBalancer": True, "internalLoadBalancerSourceRanges": ["10.0.0.0/8"]},
    },
    {
        "environment": "dev",
        "project": "traced-project",
        # business hours at a count of their own (by default the node count, which hid the setting)
        "capacity": {"nodes": 3},
        "schedule": {"businessHours": {"days": ["mon", "tue", "wed", "thu", "fri"], "replicas": 2}},
    },
    {
        "environment": "dev",
        "project": "traced-project",
        "schedule": {
            "entries": [
                {"name": "traced-morning", "cron": "0 7 * * 1-5", "replicas": 1},
                {"name": "traced-night", "cron": "0 20 * * 1-5", "replicas": 0},
            ]
        },
        "benchmark": {"enabled": True},
        "startup": {"compileCache": {"enabled": True}},
    },
)


def _measurements_key() -> tuple[str, int]:
    """The measurements file in effect and when it last changed (as `measurements.load` re-reads it)."""
    path = measurements.in_effect()
    try:
        return str(path), path.stat().st_mtime_ns
    except OSError:
        return str(path), -1


class _PerMeasurements(Generic[P, R]):
    """functools.cache, keyed by the measurements file in effect too: the answers follow its recorded
    start-up reports (a traced config's report puts every engine setting behind the schedule's lead),
    and a process may preview under another file (`render --measurements`) after one under the
    repository's."""

    def __init__(self, function: Callable[P, R]) -> None:
        self._function = function
        self._answers: dict[tuple[object, ...], R] = {}
        functools.update_wrapper(self, function)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        key = (_measurements_key(), args, tuple(sorted(kwargs.items())))
        if key not in self._answers:
            self._answers[key] = self._function(*args, **kwargs)
        return self._answers[key]

    def cache_clear(self) -> None:
        self._answers.clear()


class _Other:
    """A value no setting holds: what an unset (null) setting is changed to."""

    def __repr__(self) -> str:
        return "<another value>"


OTHER = _Other()


class _TracerFailures(logging.Filter):
    """Drops asyncio's reports of never-awaited futures in a thread while it runs the tracer. Declaring
    a component with other Args fails on purpose (the SDK refuses OTHER in an input; an existing
    cluster's checks refuse another GKE version): that is how a field is found not to feed an input.
    The failed registration futures are not awaited, and asyncio's default exception handler logs each
    one with its traceback when it is collected (`Future exception was never retrieved`): thousands of
    lines on stderr for one preview (50,021 for a gateway preview, 5,154 for a renamed existing
    cluster). `tracing()` collects them before it ends; any other report, one from another thread, and
    one at another time still reach the log."""

    def __init__(self) -> None:
        super().__init__()
        self.depth: dict[int, int] = {}  # thread ident -> nested tracing() in it
        self.declarations = 0  # runs under the mocks the tracer made, in any thread
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.thread in self.depth and "exception was never retrieved" in record.getMessage().split("\n", 1)[0]
        )

    def enter(self) -> bool:
        """Count one more tracing() in this thread; True for the outermost."""
        with self.lock:
            thread = threading.get_ident()
            self.depth[thread] = self.depth.get(thread, 0) + 1
            return self.depth[thread] == 1

    def declared(self) -> None:
        with self.lock:
            self.declarations += 1

    def leave(self) -> None:
        with self.lock:
            thread = threading.get_ident()
            self.depth[thread] -= 1
            if not self.depth[thread]:
                del self.depth[thread]


_TRACER_FAILURES = _TracerFailures()
logging.getLogger("asyncio").addFilter(_TRACER_FAILURES)


@contextlib.contextmanager
def tracing() -> Iterator[None]:
    """Quiet about the tracer's failed declarations in this thread (`_TracerFailures`): the runtime lets
    go of the last run's futures and they are collected before the quiet ends."""
    outermost = _TRACER_FAILURES.enter()
    declarations = _TRACER_FAILURES.declarations
    try:
        yield
    finally:
        if outermost and _TRACER_FAILURES.declarations != declarations:  # none when the table answered
            reset_options(project=COMPONENT_SETTINGS.project, stack=COMPONENT_SETTINGS.stack)
            gc.collect()
        _TRACER_FAILURES.leave()


def run_traced(settings: StackSettings, body: Callable[[], object]) -> mocks.RunResult:
    """A run of the tracer under the offline engine's mocks: counted, and quiet about its failures
    (`tracing()`, which collects what it left once the outermost quiet ends)."""
    with tracing():
        _TRACER_FAILURES.declared()
        return mocks.run_under_mocks(settings, body)


# Each digit and letter to the next, in its kind: "00:00" -> "11:11", the same shape.
SHIFTED = str.maketrans(
    string.digits + string.ascii_lowercase + string.ascii_uppercase,
    string.digits[1:] + "0" + string.ascii_lowercase[1:] + "a" + string.ascii_uppercase[1:] + "A",
)


def other_values(value: Any) -> list[Any]:  # noqa: PLR0911 (one answer per kind of value)
    """Values other than `value` of its kind, to change one setting to (a few, since a derived value
    may not move with every one: a Flex-start-then-Spot list and a Flex-start-only one are both not
    Spot-only)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, enum.Enum):
        return [member for member in type(value) if member is not value] or [OTHER]
    if isinstance(value, int):
        return [value + 1]
    if isinstance(value, float):
        return [value * 2 + 1]
    if isinstance(value, str):
        # reversed keeps a value's characters (a time stays a time); a palindrome ("00:00") is itself, so its
        # digits and letters move on instead ("11:11")
        turned = value[::-1] if value[::-1] != value else value.translate(SHIFTED)
        return [f"{value}-x", *([turned] if turned != value else [])]
    if isinstance(value, (list, tuple)):
        if not value:
            return [type(value)(["x-other"]), None]
        return [type(value)(value[:-1]), type(value)(value[1:]), type(value)(_other_item(item) for item in value)]
    if isinstance(value, dict):
        # a key added, and every value changed: an input one value feeds (a label) moves with the field too
        return [
            {**value, "x-other": "x"},
            *([{key: _other_item(item) for key, item in value.items()}] if value else []),
        ]
    return [OTHER, 1, "x-other"]


def _other_item(item: Any) -> Any:
    """A list item with every field changed (a dataclass), or another value of its kind."""
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.replace(
            item, **{field.name: other_values(getattr(item, field.name))[0] for field in dataclasses.fields(item)}
        )
    return item if isinstance(item, BaseModel) else other_values(item)[0]


COMPOSITION = ("stacks/program.py", "stacks/operations.py")


def _read_by_the_composition() -> bool:
    """A setting read by the composition itself, not inside the Args builder it calls."""
    frame = inspect.currentframe()
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith("stacks/args.py") and code.co_name.endswith("_args"):
            return False
        if code.co_filename.endswith(COMPOSITION):
            return True
        frame = frame.f_back
    return False


@dataclasses.dataclass
class _Recorder:
    """Notes the settings read; answers `changed` with `other` instead of its value."""

    read: list[str] = dataclasses.field(default_factory=list)
    # note only what the composition reads itself, outside the Args builders
    composition_only: bool = False
    # groups read as a whole (`engine.speculative is not None`): changed to null only
    groups: list[str] = dataclasses.field(default_factory=list)
    changed: str | None = None
    other: Any = None

    def value(self, key: str, value: Any) -> Any:
        if key not in self.read and (not self.composition_only or _read_by_the_composition()):
            self.read.append(key)
        return self.other if key == self.changed else value

    def group(self, key: str, seen: _Seen) -> Any:
        if key not in self.groups:
            self.groups.append(key)
        return self.other if key == self.changed else seen


class _Seen:
    """A config model seen through a recorder: fields give values (nested models: seen too),
    properties and methods run on the seen model, so what they read is noted as well."""

    def __init__(self, model: BaseModel, prefix: str, recorder: _Recorder) -> None:
        self._model, self._prefix, self._recorder = model, prefix, recorder

    def __getattr__(self, name: str) -> Any:
        model_type = type(self._model)
        fields = model_type.model_fields
        if name in fields:
            key = self._prefix + (fields[name].alias or name)
            value = getattr(self._model, name)
            if isinstance(value, BaseModel):
                return self._recorder.group(key, _Seen(value, f"{key}.", self._recorder))
            return self._recorder.value(key, value)
        if hasattr(BaseModel, name):  # pydantic's own (model_dump): on the model itself, not followed
            return getattr(self._model, name)
        attribute = inspect.getattr_static(model_type, name, None)
        if isinstance(attribute, property) and attribute.fget is not None:
            return attribute.fget(self)
        if inspect.isfunction(attribute):
            return types.MethodType(attribute, self)
        return getattr(self._model, name)


# An Args field's item by its key, of a list of items that name themselves: its values (`alerts[pods-pending]`), or
# its being in the list at all (`alerts[pods-pending]?`), which another setting may decide (`engine.speculative`).
ITEM_FIELD = re.compile(r"(\w+)\[(.+?)\](\??)")


def _keyed_items(value: Any) -> bool:
    """A list of dataclasses each with a `key` of its own (the alerts): one Args field per item."""
    keys = [getattr(item, "key", None) for item in value] if isinstance(value, (list, tuple)) else []
    return (
        bool(keys)
        and all(isinstance(key, str) and dataclasses.is_dataclass(item) for key, item in zip(keys, value, strict=True))
        and len(set(keys)) == len(keys)
    )


def _fields(args: object) -> dict[str, Any]:
    """An Args' fields by name; a field that is itself a dataclass (the engine flags) field by field
    (`engine.max_num_seqs`), and a list of keyed items item by item (`alerts[pods-pending]`), so that a
    change names the one setting behind it."""
    if isinstance(args, dict):
        return dict(args)
    if not dataclasses.is_dataclass(args) or isinstance(args, type):
        raise TypeError(f"{type(args).__name__} is neither a dataclass nor a dict of arguments")
    found: dict[str, Any] = {}
    for field in dataclasses.fields(args):
        value = getattr(args, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            found |= {f"{field.name}.{inner.name}": getattr(value, inner.name) for inner in dataclasses.fields(value)}
        elif _keyed_items(value):
            found |= {f"{field.name}[{item.key}]": item for item in value}
            found |= {f"{field.name}[{item.key}]?": True for item in value}
        else:
            found[field.name] = value
    return found


def _differs(one: Any, other: Any) -> bool:
    try:
        return bool(one != other)
    except Exception:
        return True


def _field_differs(base: dict[str, Any], changed: dict[str, Any], name: str) -> bool:
    """A field differs in the changed Args, or is gone from them: a dataclass field set or unset (the
    compile cache's mount) is a field of its own on one side and field by field on the other. An item gone
    from its list is its existence field's (`alerts[pods-pending]?`), not its values'."""
    if name not in changed:
        keyed = ITEM_FIELD.fullmatch(name)
        return keyed is None or bool(keyed[3])
    return _differs(base[name], changed[name])


def _items_added(base: dict[str, Any], changed: dict[str, Any]) -> set[str]:
    """The existence fields of items only the changed Args hold (an alert another setting value adds)."""
    return {name for name in changed.keys() - base.keys() if (keyed := ITEM_FIELD.fullmatch(name)) and keyed[3]}


def fields_fed(build: Callable[[Any], object], config: StackConfig) -> dict[str, set[str]]:
    """Args field -> the settings that feed it, for one component's mapping and one config."""
    recorder = _Recorder()
    base = _fields(build(_Seen(config, "", recorder)))
    fed: dict[str, set[str]] = {name: set() for name in base}
    for key in list(recorder.read):
        value = _value_at(config, key)
        touched: set[str] | None = None
        for other in other_values(value):
            try:
                changed = _fields(build(_Seen(config, "", _Recorder(changed=key, other=other))))
            except Exception:
                continue
            touched = (touched or set()) | {name for name in base if _field_differs(base, changed, name)}
            touched |= _items_added(base, changed)
        if touched is None:  # no other value builds: the setting may feed any field
            touched = set(base)
        for name in touched:
            fed.setdefault(name, set()).add(key)
    for key in recorder.groups:  # a group that may be null (`engine.speculative: null`)
        try:
            changed = _fields(build(_Seen(config, "", _Recorder(changed=key, other=None))))
        except Exception:
            continue
        for name in {name for name in base if _field_differs(base, changed, name)} | _items_added(base, changed):
            fed.setdefault(name, set()).add(key)
    return fed


def _value_at(config: BaseModel, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        model_type = type(value)
        name = next(name for name, field in model_type.model_fields.items() if (field.alias or name) == part)
        value = getattr(value, name)
    return value


def traced_configs() -> list[StackConfig]:
    return [validate(settings) for settings in TRACED_SETTINGS]


# Settings from which validation derives others (a profile's engine flags, a goal's node count, an environment's
# presets): going back on one of them alone at the derived values changes nothing, though it changed them all.
DERIVING = ("environment", "profile", "target")


def _comparable(value: Any) -> Any:
    """A value of an Args field compared by what it holds: a config group seen through a recorder by its model."""
    if isinstance(value, _Seen):
        return value._model
    if isinstance(value, (list, tuple)):
        return type(value)(_comparable(item) for item in value)
    return value


def _comparable_fields(args: object) -> dict[str, Any]:
    return {name: _comparable(value) for name, value in _fields(args).items()}


def _switched_on_by(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[str]]:
    """The switched groups one render turns on by setting other keys of theirs (`commands.io.states.switched_on_by`)
    where the other render does not write the switch (a switch written `false` is the setting that changed): those
    keys, the new render's first."""
    switched = {}
    for group in old.keys() | new.keys():
        for side, other in ((new, old), (old, new)):
            keys = switched_on_by(side.get(group))
            if keys and not (isinstance(other.get(group), dict) and "enabled" in other[group]):
                switched[group] = keys
                break
    return switched


def _config_of(settings: dict[str, Any] | None, digests: dict[str, str] | None) -> StackConfig | None:
    """A render's settings (states.json `settings`) as the config model reads them, a goal's node count set as
    `stacks.capacity.planner.resolve` sets it; None when it has none, holds what this version's model does not take
    (a render of another version, an edited file) or differs from the render's `settingDigests`."""
    if settings is None or digests is None:
        return None
    capacity = settings.get("capacity")
    nodes = capacity.get("nodes") if isinstance(capacity, dict) and settings.get("target") is not None else None
    if isinstance(capacity, dict) and nodes is not None:
        settings = {**settings, "capacity": {key: value for key, value in capacity.items() if key != "nodes"}}
    try:
        config = StackConfig.model_validate_json(json.dumps(settings), by_alias=True)
        if nodes is not None:
            config = config.model_copy(
                update={"capacity": type(config.capacity).model_validate({**vars(config.capacity), "nodes": nodes})}
            )
    except (ValueError, TypeError, RecursionError):
        return None
    return config if setting_digests(config) == digests else None


class SettingValues:
    """The settings of both renders, to ask what one changed setting alone does: each component's Args built from the
    new render's settings with that one back at the old render's value. A setting whose new value changes none of a
    component's Args fields there does not explain a change of that component (`autoscaling.maxReplicas` with
    `autoscaling.enabled` turned off; `capacity.nodes` where business hours set their own count)."""

    def __init__(self, old: StackConfig, new: StackConfig, switched_on_by: dict[str, list[str]] | None = None) -> None:
        self.old, self.new = old, new
        # the switched groups one side turns on by setting these keys of theirs, where the other writes no switch
        self.switched_on_by = switched_on_by or {}
        self._reverted: dict[tuple[str, str], frozenset[str] | None] = {}
        self._children: dict[tuple[str, str, str | None], dict[tuple[str, str], Any] | None] = {}
        self._built: dict[str, tuple[dict[str, Any], set[str]] | None] = {}

    @classmethod
    def of(cls, old: RenderStates, new: RenderStates) -> SettingValues | None:
        """Both renders' settings, when both hold settings that read as their digests say."""
        old_config, new_config = (_config_of(side.settings, side.setting_digests) for side in (old, new))
        if old_config is None or new_config is None:
            return None
        return cls(old_config, new_config, _switched_on_by(old.settings or {}, new.settings or {}))

    def changed(self, key: str) -> bool:
        """The setting differs between the renders (False also when one of them has no such setting)."""
        try:
            return _differs(_value_at(self.old, key), _value_at(self.new, key))
        except (StopIteration, AttributeError):
            return False

    def reverted_fields(self, component_type: str, key: str) -> frozenset[str] | None:
        """The component's Args fields that change when `key` alone goes back to its old value; None when not known
        (no mapping for the component, or the Args do not build either way)."""
        if (component_type, key) not in self._reverted:
            self._reverted[component_type, key] = self._revert(component_type, key)
        return self._reverted[component_type, key]

    def _revert(self, component_type: str, key: str) -> frozenset[str] | None:
        built = self._new_fields(component_type) if component_type in _builders() else None
        if built is None:
            return None
        try:
            reverted = _comparable_fields(self._args(component_type, key))
        except Exception:  # a mapping that refuses the mix of values: what the setting does is not known
            return None
        base, unstable = built
        fed = settings_by_component().get(component_type, {})
        if any(_changed_of(set(fed.get(name, ())), frozenset({key})) for name in unstable):
            return None
        moved = {name for name in base if name not in unstable and _field_differs(base, reverted, name)}
        return frozenset(moved | _items_added(base, reverted))

    def _new_fields(self, component_type: str) -> tuple[dict[str, Any], set[str]] | None:
        """The component's Args fields from the new render's settings, and those two builds give differently (an
        Output: such a field says nothing of where a setting feeds it); None when they do not build."""
        if component_type not in self._built:
            try:
                base, again = (_comparable_fields(self._args(component_type, None)) for _ in range(2))
                self._built[component_type] = base, {name for name in base if _field_differs(base, again, name)}
            except Exception:
                self._built[component_type] = None
        return self._built[component_type]

    def _args(self, component_type: str, key: str | None) -> Any:
        """The component's Args from the new render's settings, with `key` back at its old value when given."""
        recorder = _Recorder() if key is None else _Recorder(changed=key, other=_value_at(self.old, key))
        return _builders()[component_type](_Seen(self.new, "", recorder))

    def _children_of(self, component: tuple[str, str], key: str | None) -> dict[tuple[str, str], Any] | None:
        """The children (type, name -> inputs) the component declares from `_args`; None when it does not declare."""
        cached = (*component, key)
        if cached not in self._children:
            component_type, name = component
            try:
                self._children[cached] = _declared(
                    _component_class(component_type), name, self._args(component_type, key)
                )
            except Exception:  # no class (a provider), or the Args refused: not known
                self._children[cached] = None
        return self._children[cached]

    def declares_otherwise(
        self, component: tuple[str, str], key: str, child: tuple[str, str], paths: Iterable[str] = ()
    ) -> bool:
        """The changed setting `key` alone, back at its old value, changes the child's inputs (at `paths`, the inputs
        the change lists, when given), or whether the component declares it (True when that is not known)."""
        fields = self.reverted_fields(component[0], key)
        if fields is not None and not fields:
            return False
        new, reverted = self._children_of(component, None), self._children_of(component, key)
        if new is None or reverted is None:
            return True
        ours, theirs = new.get(child), reverted.get(child)
        if ours is None or theirs is None or not paths:
            return _differs(ours, theirs)
        return any(_differs(value_at(ours, parse_path(path)), value_at(theirs, parse_path(path))) for path in paths)

    def moves(self, component_type: str, key: str, field: str) -> bool:
        """The changed setting `key` alone moves the component's Args `field` (True when that is not known)."""
        fields = self.reverted_fields(component_type, key)
        return fields is None or field in fields

    def declares_the_same(self, key: str, components: Iterable[tuple[str, str]]) -> bool:
        """The changed setting `key` alone, back at its old value, moves Args fields of some of the `components`
        (type, name) the new render declares, and each of those declares the same resources with the same inputs
        either way (a threshold of alerts turned off); False where any of that is not known."""
        if not self._may_lack_effect(key):
            return False
        moving = []
        for component in components:
            if component[0] not in _builders():
                continue
            fields = self.reverted_fields(component[0], key)
            if fields is None:
                return False
            if fields:
                moving.append(component)
        for component in moving:
            new, reverted = self._children_of(component, None), self._children_of(component, key)
            if new is None or reverted is None or new.keys() != reverted.keys():
                return False
            if any(_differs(new[child], reverted[child]) for child in new):
                return False
        return bool(moving)

    def _may_lack_effect(self, key: str) -> bool:
        """Not a setting the composition reads itself (it may declare a component or leave it out) nor one others
        derive from (DERIVING), and one that differs between the renders."""
        return (
            key.split(".", maxsplit=1)[0] not in DERIVING
            and not _changed_of(set(composition_settings()), frozenset({key}))
            and self.changed(key)
        )

    def without_effect(self, roots: frozenset[str], declared: set[str]) -> frozenset[str]:
        """The changed settings (`roots`) whose new value changes no Args of any component the new render declares
        (`declared`: their types), of those some component's mapping reads (where it is left out, it reads nothing);
        never one the composition reads itself (it may declare a component or leave it out) nor one others derive
        from (DERIVING)."""
        builders = declared & set(_builders())
        found = set()
        for key in roots:
            if not self._may_lack_effect(key):
                continue
            if any(_changed_of(component_settings(kind), frozenset({key})) for kind in _builders()) and all(
                self.reverted_fields(kind, key) == frozenset() for kind in builders
            ):
                found.add(key)
        return frozenset(found)


def with_effect(
    changed: frozenset[str] | None, values: SettingValues | None, declared: set[str]
) -> tuple[frozenset[str] | None, frozenset[str]]:
    """The changed settings less those without an effect among the components the new render declares (`declared`:
    their types; `SettingValues.without_effect`), and those; all of them where none would be left (a change there
    comes from one of them)."""
    if not changed or values is None:
        return changed, frozenset()
    roots = changed_roots(changed)
    without = values.without_effect(roots, declared)
    kept = roots - without
    if not kept:
        return changed, frozenset()
    return frozenset(key for key in changed if key in kept or any(root.startswith(f"{key}.") for root in kept)), without


def _component_class(component_type: str) -> type[pulumi.ComponentResource]:
    """The component the mapping builds Args for, by its type (StopIteration for none)."""
    return next(component for component in ARGS_OF_CONFIG if component_type == component.TYPE)  # type: ignore[attr-defined]


def _builders() -> dict[str, Callable[[Any], object]]:
    """Component or provider type -> its Args from a config."""
    return {
        **{component.TYPE: build for component, build in ARGS_OF_CONFIG.items()},  # type: ignore[attr-defined]
        **PROVIDER_ARGS_OF_CONFIG,
    }


@_PerMeasurements
def settings_by_component() -> dict[str, dict[str, frozenset[str]]]:
    """Component (or provider) type -> Args field -> the stack settings that feed it: from the shipped
    table while it is current (`commands/preview/traced_table.py`), else followed."""
    table = current_table()
    if table is None:
        return trace_settings_by_component()
    return {
        component_type: {name: frozenset(keys) for name, keys in fields.items()}
        for component_type, fields in table["settingsByComponent"].items()
    }


@_PerMeasurements
def trace_settings_by_component() -> dict[str, dict[str, frozenset[str]]]:
    """settings_by_component, followed through the mapping from each traced config."""
    found: dict[str, dict[str, set[str]]] = {}
    for config in traced_configs():
        for component_type, build in _builders().items():
            fields = found.setdefault(component_type, {})
            for name, keys in fields_fed(build, config).items():
                fields.setdefault(name, set()).update(keys)
    return {
        component_type: {name: frozenset(keys) for name, keys in fields.items()}
        for component_type, fields in found.items()
    }


def component_settings(component_type: str, fields: Iterable[str] | None = None) -> set[str]:
    """The settings that feed a component (its `fields` only, when given)."""
    fed = settings_by_component()[component_type]
    names = fed if fields is None else [name for name in fields if name in fed]
    return {key for name in names for key in fed[name]}


@_PerMeasurements
def composition_settings() -> frozenset[str]:
    """The settings the composition reads itself: from the shipped table while it is current, else followed."""
    table = current_table()
    return trace_composition_settings() if table is None else frozenset(table["compositionSettings"])


def trace_composition_settings() -> frozenset[str]:
    """The settings the composition reads itself (`stacks/program.py`, `stacks/operations.py`), outside
    the Args builders: those that decide which components it declares (`routing.mode`,
    `benchmark.enabled`...). Followed by running the composition under the mocks from each traced config."""
    return frozenset(key for _, _, read in _composition_of_traced() for key in read)


def switched_by(key: str) -> frozenset[str]:
    """The types of the components a setting the composition reads declares or leaves out: from the
    shipped table while it is current, else followed."""
    table = current_table()
    if table is None:
        return trace_switched_by(key)
    return frozenset(table["componentSwitches"].get(key, ()))


def _is_switch(value: Any) -> bool:
    """A setting's value that may turn a component on or off: a boolean, a choice, a mapping (the
    engine's secret environment) or an unset value."""
    return value is None or isinstance(value, (bool, enum.Enum, dict))


def _components_declared(config: StackConfig, recorder: _Recorder) -> frozenset[str]:
    """The types of the components the composition declares from `config` seen through `recorder`."""
    kinds = set(_builders())
    run = run_traced(
        COMPONENT_SETTINGS,
        lambda: program.build(_Seen(config, "", recorder), pulumi.Output.secret("")),  # type: ignore[arg-type]
    )
    return frozenset(entry.type for entry in run.registrations if entry.type in kinds)


@_PerMeasurements
def _composition_of_traced() -> tuple[tuple[StackConfig, frozenset[str], tuple[str, ...]], ...]:
    """Each traced config, the components the composition declares from it, and the settings the
    composition reads itself (outside the Args builders) to do so."""
    found = []
    for config in traced_configs():
        recorder = _Recorder(composition_only=True)
        found.append((config, _components_declared(config, recorder), tuple(recorder.read)))
    return tuple(found)


@_PerMeasurements
def trace_switched_by(key: str) -> frozenset[str]:
    """The components a setting the composition reads declares or leaves out: from each traced config
    that reads it as a switch (`_is_switch`), the composition is declared again with the setting at its
    other values, and the components that come or go are the ones it switches (`autoscaling.enabled`
    the autoscaler's, `routing.mode` the Gateway's and the ClusterIP routing's)."""
    found: set[str] = set()
    for config, declared, read in _composition_of_traced():
        if key not in read or not _is_switch(value := _value_at(config, key)):
            continue
        for other in other_values(value):
            try:
                switched = _components_declared(config, _Recorder(changed=key, other=other))
            except Exception:
                continue
            found |= declared ^ switched
    return frozenset(found)


# ---------------------------------------------------------------- Args field -> the inputs it feeds


@dataclasses.dataclass(frozen=True)
class Item:
    """A list item by what it is, not where it sits, so that what one layout of a component teaches
    holds in another (the Gateway's per-rank pod runs 8 containers `vllm-0`..`vllm-7` where ClusterIP
    routing runs one `vllm`; a flag left out moves every later argument): an object by its `name`
    (`containers[vllm]`), a command-line flag by its name (`args[--max-num-seqs]`), any other item
    as an item of its list (`[]`)."""

    kind: str  # NAMED, FLAG or ANY
    key: str = ""

    def __str__(self) -> str:
        return f"[{self.key}]"


NAMED, FLAG, ANY = "named", "flag", "any"
# an input path with its list items as `Item`s; () is the resource itself (created or deleted)
Anchor = tuple["str | Item", ...]
IDENTITY: Anchor = ()
# what makes a created or deleted resource another one: its name
IDENTITY_ANCHORS = frozenset({("name",), ("metadata", "name"), ("metadata", "namespace")})
Touched = frozenset[tuple[str, str, Anchor]]  # (child type, child logical name, input anchor)


def item_of(value: Any) -> Item:
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return Item(NAMED, value["name"])
    if isinstance(value, str) and value.startswith("-"):
        # `--max-num-seqs=8192` -> `--max-num-seqs`; a short flag by its letter (`-O3` -> `-O`)
        return Item(FLAG, value.split("=", 1)[0] if value.startswith("--") else value[:2])
    return Item(ANY)


def dotted(anchor: Anchor) -> str:
    """`spec.template.spec.containers[vllm].args[--max-num-seqs]`; `*` for the resource itself."""
    text = "".join(str(part) if isinstance(part, Item) else f".{part}" for part in anchor).lstrip(".")
    return text or "*"


def _step(value: Any, segment: Segment) -> Any:
    if isinstance(segment, int):
        return value[segment] if isinstance(value, list) and segment < len(value) else None
    return value.get(segment) if isinstance(value, dict) else None


def anchors_of(old_inputs: Any, new_inputs: Any, path: tuple[Segment, ...], old: Any, new: Any) -> frozenset[Anchor]:
    """Where a difference between two inputs sits, its list items named by what they are: each list
    index by the items at it on either side (`--enable-prefix-caching` turned `--no-enable-prefix-caching`
    is both), and a list that grew or shrank by the items only one side holds."""
    anchors: set[Anchor] = {()}
    old_here, new_here = old_inputs, new_inputs
    for segment in path:
        items: set[str | Item]
        if isinstance(segment, int):
            items = {
                item_of(side[segment])
                for side in (old_here, new_here)
                if isinstance(side, list) and segment < len(side)
            }
        else:
            items = {str(segment)}
        anchors = {(*anchor, item) for anchor in anchors for item in items}
        old_here, new_here = _step(old_here, segment), _step(new_here, segment)
    if isinstance(old, list) or isinstance(new, list):
        olds, news = (old if isinstance(old, list) else []), (new if isinstance(new, list) else [])
        only_one_side = {item_of(item) for item in olds if item not in news} | {
            item_of(item) for item in news if item not in olds
        }
        if only_one_side:
            return frozenset((*anchor, item) for anchor in anchors for item in only_one_side)
    return frozenset(anchors)


def _differences(old: Any, new: Any, path: tuple[Segment, ...] = ()) -> list[tuple[tuple[Segment, ...], Any, Any]]:
    """Where two input values differ (objects key by key, lists of one length item by item)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            found
            for key in sorted(old.keys() | new.keys())
            for found in _differences(old.get(key), new.get(key), (*path, key))
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            found
            for index, pair in enumerate(zip(old, new, strict=True))
            for found in _differences(*pair, (*path, index))
        ]
    return [] if old == new else [(path, old, new)]


def closeness(fed: Anchor, changed: Anchor) -> tuple[int, int] | None:
    """How closely an input an Args field feeds matches a changed one, or None when they are apart:
    (the depth both reach, the parts that are the same there). Objects of another name are taken for
    the same place (`containers[vllm]` and `containers[vllm-3]`), but count for less than the same name; so is an
    item a field adds to a list without a name or a flag of its own (`engine.extraArgs`' items), any item there."""
    if changed == IDENTITY:
        return (0, 0) if fed == IDENTITY or fed in IDENTITY_ANCHORS else None
    depth = min(len(fed), len(changed))
    same = 0
    for one, other in zip(fed[:depth], changed[:depth], strict=True):
        if one == other:
            same += 1
        elif not (
            isinstance(one, Item) and isinstance(other, Item) and (one.kind == other.kind == NAMED or one.kind == ANY)
        ):
            return None
    return depth, same


def _declared(component: type[pulumi.ComponentResource], name: str, args: object) -> dict[tuple[str, str], Any]:
    built = run_traced(COMPONENT_SETTINGS, lambda: component(name, args))  # type: ignore[call-arg,arg-type]
    return {(entry.type, entry.name): entry.inputs for entry in built.registrations if entry.custom}


def _other_args(args: Any, field: str) -> list[Any]:
    """The component's Args with one field (`engine.max_num_seqs`: one field of a field) changed; an item's values
    (`alerts[pods-pending]`): every field of it but its key; its existence (`alerts[pods-pending]?`): the list without
    it. None for an item this config's Args do not hold."""
    keyed = ITEM_FIELD.fullmatch(field)
    if keyed:
        items, item = getattr(args, keyed[1]), _field_value(args, field)
        if item is None:
            return []
        if keyed[3]:
            return [dataclasses.replace(args, **{keyed[1]: type(items)(one for one in items if one is not item)})]
        changed = dataclasses.replace(
            item,
            **{
                part.name: other_values(getattr(item, part.name))[0]
                for part in dataclasses.fields(item)
                if part.name != "key"
            },
        )
        return [dataclasses.replace(args, **{keyed[1]: type(items)(changed if one is item else one for one in items)})]
    outer, _, inner = field.partition(".")
    if inner:
        value = getattr(args, outer)
        return [
            dataclasses.replace(args, **{outer: dataclasses.replace(value, **{inner: other})})
            for other in _others(value, inner)
        ]
    return [dataclasses.replace(args, **{field: other}) for other in _others(args, field)]


def _others(holder: Any, name: str) -> list[Any]:
    """Other values of one field of an Args dataclass; None too when the field is optional and set (the
    internal load balancer's ranges, the download Job's name: a child that only a set value declares), by its
    default or by its type (`X | None`, `Optional[X]`)."""
    value = getattr(holder, name)
    args_type: Any = type(holder)
    return [*other_values(value), *([None] if value is not None and name in _optional_fields(args_type) else [])]


@functools.cache
def _optional_fields(args_type: Any) -> frozenset[str]:
    """The fields of an Args dataclass that may be None: by their default, or by their resolved type."""
    # pulumi.Input is a Union naming "Output[T]", which resolves in the module that defines it
    hints = typing.get_type_hints(args_type, localns=vars(pulumi.output))
    return frozenset(
        field.name
        for field in dataclasses.fields(args_type)
        if field.default is None or type(None) in typing.get_args(hints[field.name])
    )


def _recorded(component_type: str, name: str) -> dict[str, Any] | None:
    """The shipped table's answers for the component of that type and name, when it is current and has it."""
    table = current_table()
    return None if table is None else table["components"].get(component_type, {}).get(name)


def encode_anchor(anchor: Anchor) -> list[Any]:
    """An anchor as JSON: an input's key as a string, a list item as {"kind", "key"}."""
    return [part if isinstance(part, str) else {"kind": part.kind, "key": part.key} for part in anchor]


def decode_anchor(parts: list[Any]) -> Anchor:
    return tuple(part if isinstance(part, str) else Item(part["kind"], part["key"]) for part in parts)


@_PerMeasurements
def inputs_fed(component_type: str, name: str, field: str) -> Touched:
    """The children's inputs that one Args field of the component named `name` feeds: from the shipped
    table while it is current and holds that component, else followed (`trace_inputs_fed`)."""
    recorded = _recorded(component_type, name)
    if recorded is None or field not in recorded["inputsFed"]:
        return trace_inputs_fed(component_type, name, field)
    return frozenset(
        (child_type, child_name, decode_anchor(anchor))
        for child_type, child_name, anchor in recorded["inputsFed"][field]
    )


@_PerMeasurements
def trace_inputs_fed(component_type: str, name: str, field: str) -> Touched:
    """The children's inputs that one Args field of the component named `name` feeds: the component
    is declared under the offline engine's mocks with the Args of each traced config and with that
    field changed (their union: each config declares the component in its own layout)."""
    if component_type in PROVIDER_ARGS_OF_CONFIG:
        return frozenset({(component_type, name, (to_camel(field),))})
    touched: set[tuple[str, str, Anchor]] = set()
    for component, args, base in _traced_components(component_type, name):
        try:
            others = _other_args(args, field)
        except (AttributeError, TypeError):  # a field of a field that is null in this config
            continue
        single = not _is_collection(_field_value(args, field)) and not ITEM_FIELD.fullmatch(field)
        moved = False
        for other_args in others:
            if moved and single and _field_value(other_args, field) is not None:
                continue  # another value of a single value moves the same inputs (a list's may move each item); unset
                # (None) may leave a child out
            try:
                changed = _declared(component, name, other_args)
            except Exception:
                continue
            found = _touched(base, changed)
            touched |= found
            moved = moved or bool(found)
    return frozenset(touched)


def _touched(base: dict[tuple[str, str], Any], changed: dict[tuple[str, str], Any]) -> set[tuple[str, str, Anchor]]:
    touched: set[tuple[str, str, Anchor]] = set()
    for key in base.keys() | changed.keys():
        if key not in base or key not in changed:
            touched.add((*key, IDENTITY))
            continue
        for path, old, new in _differences(base[key], changed[key]):
            touched.update((*key, anchor) for anchor in anchors_of(base[key], changed[key], path, old, new))
    return touched


def _field_value(args: Any, field: str) -> Any:
    keyed = ITEM_FIELD.fullmatch(field)
    if keyed:
        return next((item for item in getattr(args, keyed[1]) if item.key == keyed[2]), None)
    value = args
    for part in field.split("."):
        value = getattr(value, part)
    return value


def _is_collection(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict))


@_PerMeasurements
def _traced_components(
    component_type: str, name: str
) -> tuple[tuple[type[pulumi.ComponentResource], Any, dict[tuple[str, str], Any]], ...]:
    """The component class, its Args and the children it declares (type, name -> inputs), from each traced config."""
    component = _component_class(component_type)
    traced: list[tuple[type[pulumi.ComponentResource], Any, dict[tuple[str, str], Any]]] = []
    for config in traced_configs():
        args = ARGS_OF_CONFIG[component](config)
        declared = _declared(component, name, args)
        if all(_layout(declared) != _layout(earlier) for _, _, earlier in traced):  # a layout of its own
            traced.append((component, args, declared))
    return tuple(traced)


def _layout(declared: dict[tuple[str, str], Any]) -> frozenset[tuple[str, str, Anchor]]:
    """Where each child's inputs sit, values aside: two configs of one layout teach the same inputs."""
    return frozenset((*key, anchor) for key, inputs in declared.items() for anchor in _places(inputs))


def _places(value: Any, anchor: Anchor = ()) -> Iterable[Anchor]:
    if isinstance(value, dict):
        return [place for key, item in value.items() for place in _places(item, (*anchor, str(key)))]
    if isinstance(value, list):
        return [place for item in value for place in _places(item, (*anchor, item_of(item)))]
    return [anchor]


def traced_children(component_type: str, name: str) -> frozenset[tuple[str, str]]:
    """(type, name) of the children the component declares in the traced configs' layouts."""
    recorded = _recorded(component_type, name)
    if recorded is not None:
        return frozenset((child_type, child_name) for child_type, child_name in recorded["children"])
    return trace_children(component_type, name)


def trace_children(component_type: str, name: str) -> frozenset[tuple[str, str]]:
    if component_type in PROVIDER_ARGS_OF_CONFIG:
        return frozenset({(component_type, name)})
    return frozenset(key for _, _, declared in _traced_components(component_type, name) for key in declared)


# ---------------------------------------------------------------- a preview's changes -> settings

NOT_FROM_SETTINGS = "declared by no component that stacks/args.py builds from the stack's settings"
NO_SETTING_CHANGED = (
    "no stack setting that feeds {component} changed, as far as the unchanged resources show: the program "
    "itself declares it otherwise (another version of it)"
)
NO_SETTING_DIFFERS = (
    "no stack setting differs between the two renders (their settingDigests agree): the program itself "
    "declares it otherwise (another version of it)"
)

# capacity.json's figures that come from the measurements file, and what each is called in a preview line
MEASURED_FIGURES = {"timeToServe": "the time to serve", "expectation": "the expected throughput"}
NO_SETTING_BUT_MEASUREMENTS = (
    "no stack setting differs between the two renders (their settingDigests agree), but their capacity.json holds "
    "other figures for {figures}, and what is sized from them follows (the startup probe, the progress deadline, the "
    "wake, the alerts): either a measurement behind them changed (a benchmark or start-up report recorded into the "
    "measurements file) or another version of the program computes them otherwise"
)


def name_changed_measurements(changes: list[ResourceChange], old: object, new: object) -> None:
    """Where no stack setting differs, the changes say so and name the capacity plan's measured figures that do
    (`old` and `new`: the two renders' capacity.json, or None)."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return
    differ = [name for key, name in MEASURED_FIGURES.items() if old.get(key) != new.get(key)]
    for change in changes:
        if differ and change.no_config_keys == NO_SETTING_DIFFERS:
            change.no_config_keys = NO_SETTING_BUT_MEASUREMENTS.format(figures=" and ".join(differ))


SECRET_KEY_CHANGED = (
    "a secret config key behind it was {how} (hfToken, or a key engine.secretEnv names); settingDigests leave "
    "secret keys out, so which one is not named here"
)
SECRET_CHANGES = {
    (CIPHERTEXT, CIPHERTEXT): "set again: its `secure:` ciphertext changed",
    (UNSET, CIPHERTEXT): "set (the old render left it unset)",
    (CIPHERTEXT, UNSET): "unset (the old render had a `secure:` value)",
    (CIPHERTEXT, FROM_ESC): (
        "moved from a `secure:` value to the stack's ESC environment, which an offline render cannot open (it may set "
        "the same value, another, or none)"
    ),
    (FROM_ESC, CIPHERTEXT): (
        "moved from the stack's ESC environment to a `secure:` value (an offline render reads neither: it may be the "
        "same value)"
    ),
    (UNSET, FROM_ESC): (
        "left to the stack's ESC environment, which an offline render cannot open (the old render left it unset; ESC "
        "may set it or not)"
    ),
    (FROM_ESC, UNSET): "unset (the old render left it to the stack's ESC environment)",
}


def _secret_change(old: object, new: object) -> str | None:
    """How a secret config value behind an input changed, when both sides are its digests
    (commands/engine/secrets.py: a ciphertext's, `esc` or `unset`) and they differ."""
    return None if old == new else SECRET_CHANGES.get((shown_kind(old), shown_kind(new)))


class _Attribution:
    def __init__(self, old: dict[str, Record], new: dict[str, Record], values: SettingValues | None = None) -> None:
        self.values = values
        # logical name -> record; a component wins a name it shares with a resource (as in update_plan)
        self.named: dict[str, Record] = {}
        for record in sorted([*old.values(), *new.values()], key=lambda record: record["custom"], reverse=True):
            self.named[record["name"]] = record
        self.old, self.new = old, new

    def component_of(self, record: Record) -> tuple[str, str] | None:
        """(type, name) of the outermost component around `record` (or itself: a provider) that the
        mapping builds Args for: the one the composition declares (the Gateway's own CRD readiness
        Job belongs to the Gateway, which builds its Args)."""
        known = settings_by_component()
        found = None
        seen: set[str] = set()
        current: Record | None = record
        while current is not None and current["name"] not in seen:
            if current["type"] in known:
                found = current["type"], current["name"]
            seen.add(current["name"])
            current = self.named.get(current["parent"]) if current.get("parent") else None
        return found

    def declared_on_one_side(self, component: tuple[str, str]) -> bool:
        """The composition declares the component in one render only (it turned it on or off)."""
        sides = [
            any((record["type"], record["name"]) == component for record in records.values())
            for records in (self.old, self.new)
        ]
        return sides[0] != sides[1]

    def unchanged_settings(self, changes: list[ResourceChange]) -> set[str]:
        """The settings of components present on both sides with no change under them: none of them changed."""
        changed = {self.component_of(change.record) for change in changes}
        kept = {self.component_of(self.new[urn]) for urn in self.old.keys() & self.new.keys()} - changed - {None}
        return {key for component_type, _ in kept if component_type for key in component_settings(component_type)}  # type: ignore[misc]

    def anchors(self, change: ResourceChange) -> list[frozenset[Anchor]]:
        """Where each changed input sits in its resource's inputs (IDENTITY: a created or deleted resource)."""
        if not change.inputs:
            return [frozenset({IDENTITY})]
        old = self.old[change.urn]["inputs"] if change.urn in self.old else {}
        new = self.new[change.urn]["inputs"] if change.urn in self.new else {}
        return [anchors_of(old, new, parse_path(entry.path), entry.old, entry.new) for entry in change.inputs]

    def keys_for(
        self,
        component: tuple[str, str],
        record: Record,
        anchors: frozenset[Anchor],
        candidates: set[str],
        one_group_fields: bool = False,
        path: str | None = None,
    ) -> set[str]:
        """The candidate settings whose Args fields feed one changed input of `record`, where `anchors`
        place it (IDENTITY: its existence); with `one_group_fields`, only through fields built from the settings
        of one group (the internal load balancer's ranges: routing.internalLoadBalancer and its source ranges),
        not from several (the schedule's steps)."""
        component_type, name = component
        fed = settings_by_component()[component_type]
        if one_group_fields:
            fed = {field: keys for field, keys in fed.items() if len({key.rpartition(".")[0] for key in keys}) == 1}
        same_name = (record["type"], record["name"]) in traced_children(component_type, name)
        # anchor -> field -> how closely the field feeds it (an input the field feeds itself is closer than a
        # whole list that holds it; another resource altogether is the loosest tie): each changed place of the
        # input names the fields closest to it (a list's changed flag its setting, an added one extraArgs)
        closest_of: dict[Anchor, dict[str, tuple[int, int]]] = {anchor: {} for anchor in anchors}
        for field, keys in fed.items():
            if not keys & candidates:
                continue
            for child_type, child_name, fed_anchor in inputs_fed(component_type, name, field):
                if child_type != record["type"] or (same_name and child_name != record["name"]):
                    continue
                for anchor in anchors:
                    found = closeness(fed_anchor, anchor)
                    if found is not None and found > closest_of[anchor].get(field, (-1, -1)):
                        closest_of[anchor][field] = found
        named: set[str] = set()
        for fields in closest_of.values():
            closest = max(fields.values(), default=None)
            for field in [field for field, found in fields.items() if found == closest]:
                named |= self._moving(component_type, field, fed[field] & candidates)
        return self._declaring(component, record, named, [path] if path else [])

    def declaring(self, record: Record, tiers: Iterable[set[str]], paths: list[str]) -> set[str]:
        """For a resource no traced input explains: of the first group of changed settings (`tiers`: its component's,
        then those any component reads, then all) that holds one, those that alone change what its component declares
        for it (`SettingValues.declares_otherwise`); none when the renders have no settings or none does."""
        component = self.component_of(record)
        if self.values is None or component is None:
            return set()
        child = (record["type"], record["name"])
        for keys in tiers:
            declaring = {key for key in keys if self.values.declares_otherwise(component, key, child, paths)}
            if declaring:
                return declaring
        return set()

    def _declaring(self, component: tuple[str, str], record: Record, keys: set[str], paths: list[str]) -> set[str]:
        """Where several changed settings are named for one resource, those that alone change what the component
        declares for it (its inputs, or whether it is there), with the unchanged ones; all of them when none does."""
        values = self.values
        changed = {key for key in keys if values is not None and values.changed(key)}
        if values is None or len(changed) < 2:
            return keys
        child = (record["type"], record["name"])
        declaring = {key for key in changed if values.declares_otherwise(component, key, child, paths)}
        return (keys - changed) | declaring if declaring else keys

    def _moving(self, component_type: str, field: str, keys: frozenset[str]) -> set[str]:
        """Of the settings that feed an Args field, those that changed and alone move it in the new render's
        settings (`SettingValues`), with the unchanged ones; all of them when none of those that changed does (two
        settings that each give the same value) or the renders have no settings."""
        values = self.values
        if values is None:
            return set(keys)
        changed = {key for key in keys if values.changed(key)}
        moving = {key for key in changed if values.moves(component_type, key, field)}
        return set(keys - changed) | moving if moving or not changed else set(keys)


def name_settings(
    changes: list[ResourceChange],
    old: dict[str, Record],
    new: dict[str, Record],
    changed: frozenset[str] | None = None,
    values: SettingValues | None = None,
) -> None:
    """Name the stack settings behind each change (`config_keys`), or say why none (`no_config_keys`).

    An input change names the settings whose Args fields feed that input of the component declaring
    the resource; a created or deleted resource, those that feed its name. Where none is found, and
    for a component the composition declares in one render only, the candidates are the component's
    settings (the composition's own, for one that comes or goes) less those of every component
    that did not change at all. Where an input may come from several settings (a disk's name:
    `cluster.name`, `weights.model`, `weights.revision`), those that are the only candidate of some
    other change in the same update are kept, when there are any.

    `changed`, the settings whose values differ between the two renders when both recorded them
    (`commands.io.states.setting_digests`), decides instead of the unchanged resources: a change names
    the candidates that changed; else (the traced configs did not show the input moving with a setting)
    a changed setting no followed input of the update explains, of its component first, then of any
    component, then any. A component declared on one side only names its changed switches (`switched_by`)
    and the changed settings of fields built from one setting that decide the resource's existence in it;
    where no switch of it changed, the composition's changed settings, those that feed no unchanged
    component first. Every changed candidate is named by one change at least. Where no setting changed at
    all, it says so. With both renders' settings (`values`), a changed setting that feeds an input is named for it
    only if it alone moves the Args field behind it (`SettingValues`), unless none of them does."""
    attribution = _Attribution(old, new, values)
    roots = None if changed is None else changed_roots(changed)
    with tracing():
        _name_settings(changes, attribution, roots)
    if roots:
        _name_the_sources(changes, roots)
    if values is not None:
        _name_what_turns_switches_on(changes, values)
        if roots:
            _name_what_a_component_comes_with(changes, roots, attribution, values)


# Settings whose values other settings give when the stack file leaves them out: a profile its checkpoint's
# weights, engine flags and workload (stacks/config/profiles.py), a goal the node count (the planner).
DERIVED_FROM = {"profile": ("weights.", "engine.", "workload."), "target.": ("capacity.nodes",)}


def _name_the_sources(changes: list[ResourceChange], roots: frozenset[str]) -> None:
    """A change that names a setting another setting that changed gives (`weights.model` from a new `profile`,
    `capacity.nodes` from a new goal) names that one too: every changed setting is named by a change."""
    for source, derived in DERIVED_FROM.items():
        sources = (
            # a group's fields, or the group set from null (a `target` where `capacity.nodes` was)
            {root for root in roots if root.startswith(source) or root == source.removesuffix(".")}
            if source.endswith(".")
            else ({source} & roots)
        )
        if not sources:
            continue
        for change in changes:
            if any(key.startswith(derived) for key in change.config_keys):
                change.config_keys.update(sources)


def _name_what_turns_switches_on(changes: list[ResourceChange], values: SettingValues) -> None:
    """A change that names a switch the stack file turns on by setting other keys of its group, and not the switch
    itself (`warmCapacity: {nodes: 2}`; `stacks.config.base.SwitchedGroup`), names those keys too, as the side where
    the switch is on sets them: they are what the file changed."""
    for change in changes:
        for group, keys in values.switched_on_by.items():
            if f"{group}.enabled" in change.config_keys:
                change.config_keys.update(f"{group}.{key}" for key in keys)


def _name_what_a_component_comes_with(
    changes: list[ResourceChange], roots: frozenset[str], attribution: _Attribution, values: SettingValues
) -> None:
    """A changed setting no change names, that alone moves the Args of a component the composition declares on one
    side only, is named on that component's created or deleted resources: it is what they come or go with
    (`warmCapacity.nodes` beside a written `warmCapacity.enabled: true`: the new buffer holds that many nodes)."""
    named = {key for change in changes for key in change.config_keys}
    one_sided = [
        (change, component)
        for change in changes
        if (component := attribution.component_of(change.record)) is not None
        and attribution.declared_on_one_side(component)
    ]
    for key in sorted(roots - named):
        for change, component in one_sided:
            if values.reverted_fields(component[0], key):
                change.config_keys.add(key)


def _name_settings(changes: list[ResourceChange], attribution: _Attribution, roots: frozenset[str] | None) -> None:
    unchanged = attribution.unchanged_settings(changes)
    # (change, settings, whether those another change explains come last: the update's changed settings
    # not traced to this change, or the composition's for a component it declares on one side only)
    wanted: list[tuple[ResourceChange, set[str], bool]] = []
    # with digests: (change, its component's type when declared on one side only, its candidates, its
    # inputs' traced keys: for a component declared on one side only, those that feed its existence)
    pending: list[tuple[ResourceChange, str | None, set[str], list[set[str]]]] = []
    for change in changes:
        secret_changes = [_secret_change(entry.old, entry.new) for entry in change.inputs]
        hows = sorted({how for how in secret_changes if how is not None})
        if change.inputs and None not in secret_changes:
            change.no_config_keys = SECRET_KEY_CHANGED.format(how=" and ".join(hows))
            continue
        component = attribution.component_of(change.record)
        if component is None:
            change.no_config_keys = NOT_FROM_SETTINGS
            continue
        whole = attribution.declared_on_one_side(component)
        settings = set(composition_settings()) if whole else component_settings(component[0])
        traced = (
            [set()]
            if whole
            else [
                attribution.keys_for(component, change.record, anchors, settings, path=path or None)
                for anchors, path in zip(
                    attribution.anchors(change), [*(entry.path for entry in change.inputs)] or [""], strict=True
                )
            ]
        )
        if roots is None:
            found = [keys or settings - unchanged for keys in traced]
            if not any(found):
                change.no_config_keys = NO_SETTING_CHANGED.format(component=component[0])
            wanted += [(change, keys, False) for keys in found if keys]
        elif not roots:
            change.no_config_keys = NO_SETTING_DIFFERS
        elif whole:
            existence = attribution.keys_for(
                component, change.record, frozenset({IDENTITY}), component_settings(component[0]), True
            )
            pending.append((change, component[0], settings, [existence]))
        else:
            pending.append((change, None, settings, traced))
    if roots:
        wanted += _named_from_digests(pending, roots, unchanged, attribution)
    certain = {next(iter(keys)) for _, keys, loose in wanted if len(keys) == 1 and not loose}
    for change, keys, loose in wanted:
        change.config_keys.update(((keys - certain) if loose else (keys & certain)) or keys)
    if roots is not None:
        # a changed setting some change may come from is named by one at least (the Gateway's per-rank
        # containers hold the new --max-num-seqs too: routing.mode alone would hide it)
        unnamed = {key for _, keys, _ in wanted for key in keys} - {
            key for change, _, _ in wanted for key in change.config_keys
        }
        for change, keys, _ in wanted:
            change.config_keys.update(keys & unnamed)


def _named_from_digests(
    pending: list[tuple[ResourceChange, str | None, set[str], list[set[str]]]],
    roots: frozenset[str],
    unchanged: set[str],
    attribution: _Attribution,
) -> list[tuple[ResourceChange, set[str], bool]]:
    """The settings each change names when both renders recorded digests (`name_settings`)."""
    # the changed settings a traced input names: what their changes are, not a guess for another input
    explained = {
        root for _, whole, _, traced in pending if whole is None for keys in traced for root in _changed_of(keys, roots)
    }
    read = set(composition_settings()).union(*(component_settings(kind) for kind in settings_by_component()))
    wanted: list[tuple[ResourceChange, set[str], bool]] = []
    for change, whole, settings, traced in pending:
        for keys in traced:
            named, loose = _changed_of(keys, roots), False
            if whole is not None:
                # the changed switches that declare or leave out this component (and those that feed
                # the resource's existence in it: the internal load balancer's Service); else the
                # composition's changed settings, those that also feed a component that did not change last
                switches = _changed_of(
                    {key for key in settings if _changed_of({key}, roots) and whole in switched_by(key)}, roots
                )
                loose = not switches
                named |= switches or (
                    _changed_of(settings - unchanged, roots) or _changed_of(settings, roots) or set(roots)
                )
            elif not named:  # the traced configs did not show this input moving with a setting
                own = _changed_of(settings, roots)
                unexplained = (own, _changed_of(read, roots), set(roots))
                named = attribution.declaring(
                    change.record, unexplained, [entry.path for entry in change.inputs]
                ) or next((found - explained for found in unexplained if found - explained), own or set(roots))
                loose = True
            wanted.append((change, named, loose))
    return wanted


def changed_roots(changed: frozenset[str]) -> frozenset[str]:
    """The settings that changed, each named once: a group's changed fields instead of the group
    (`engine.maxNumSeqs`, not `engine`), a group set to or from null as itself (`engine.speculative`)."""
    return frozenset(key for key in changed if not any(other.startswith(f"{key}.") for other in changed))


def _changed_of(keys: set[str], roots: frozenset[str]) -> set[str]:
    """Of the candidate settings, those that changed: a candidate group by its changed fields
    (`routing.gateway` by `routing.gateway.eppImage`), a candidate field of a group set to or from null
    by that group."""
    return {
        root
        for key in keys
        for root in roots
        if root == key or root.startswith(f"{key}.") or key.startswith(f"{root}.")
    }
