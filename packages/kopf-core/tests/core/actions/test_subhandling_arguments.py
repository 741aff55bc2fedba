"""
``kopf.execute()``'s arguments: what it cannot do is refused, not ignored.

Kopf accepts ``cause=`` for its internal use; here, the sub-handlers always run
with the current handler's object, so it is refused with a message. Of ``fns=``,
``handlers=`` and ``registry=``, one at most is used, so passing several is an error.
"""
from typing import Any

import pytest

import kopf


def sub_fn(**_: Any) -> None:
    pass


async def test_cause_is_refused() -> None:
    with pytest.raises(TypeError, match=r"kopf.execute\(cause=...\) is not supported"):
        await kopf.execute(fns=[sub_fn], cause=object())


@pytest.mark.parametrize('kwargs', [
    dict(fns=[sub_fn], registry=kopf.OperatorRegistry()),
    dict(fns=[sub_fn], handlers=[]),
    dict(handlers=[], registry=kopf.OperatorRegistry()),
])
async def test_several_sources_of_subhandlers_are_refused(kwargs: Any) -> None:
    with pytest.raises(TypeError, match=r"Only one of fns=, handlers=, registry= can be passed"):
        await kopf.execute(**kwargs)
