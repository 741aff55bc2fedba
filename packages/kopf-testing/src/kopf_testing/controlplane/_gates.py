"""
Feature gates of the local control plane: ``--feature-gates=Name=true,...`` of its servers.

A gate turns a Kubernetes feature on or off (e.g. ``ShardedListAndWatch``, off by
default while alpha), so that tests can run against the server-side behaviour and
without it. Only the format is checked here: whether the pinned release knows the
gate is for the servers to say, and they refuse an unknown one at their start
("unrecognized feature gate"), which the start's error then quotes.
"""
import re
from collections.abc import Mapping

FeatureGates = Mapping[str, bool]

_NAME = re.compile(r'[A-Za-z][A-Za-z0-9]*')
_VALUES = {'true': True, 'false': False}
_EXAMPLE = 'ShardedListAndWatch=true,WatchList=false'


class FeatureGatesError(ValueError):
    """Feature gates that are not ``Name=true|false`` pairs."""


def check_feature_gates(gates: FeatureGates) -> dict[str, bool]:
    """A copy of the gates, if each is a gate's name mapped to a bool; else one error naming the bad ones."""
    bad_names = [name for name in gates if not isinstance(name, str) or not _NAME.fullmatch(name)]
    if bad_names:
        raise FeatureGatesError(f'Feature gate names are CamelCase words of letters and digits '
                                f'(e.g. ShardedListAndWatch), not {", ".join(map(repr, bad_names))}.')
    bad_values = {name: value for name, value in gates.items() if not isinstance(value, bool)}
    if bad_values:
        raise FeatureGatesError(f'Feature gates are turned on or off with True or False, not {bad_values!r}.')
    return dict(gates)


def parse_feature_gates(text: str) -> dict[str, bool]:
    """Parse ``Name=true,Other=false`` (as the servers' ``--feature-gates`` flag takes it; spaces ignored)."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(','))):
        name, sep, value = (part.strip() for part in item.partition('='))
        if not sep or value.lower() not in _VALUES or not _NAME.fullmatch(name):
            raise FeatureGatesError(f'Feature gates are Name=true or Name=false, separated by commas '
                                    f'(e.g. {_EXAMPLE}); {item!r} is not.')
        if name in gates:
            raise FeatureGatesError(f'The feature gate {name} is given twice in {text!r}; give it once.')
        gates[name] = _VALUES[value.lower()]
    return gates


def format_feature_gates(gates: FeatureGates) -> str:
    """The value of the servers' ``--feature-gates`` flag, in a stable order."""
    return ','.join(f'{name}={"true" if value else "false"}' for name, value in sorted(gates.items()))
