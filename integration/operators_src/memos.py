"""
Each object's memo: a shallow copy of the operator's memo, made when the object is first seen, kept across its cycles.

The startup handler fills the operator's memo: a counter (a value: each object's copy counts on its own)
and a list (a mutable value: the copies share it). The create and update handlers count in the object's
memo, note the object's name in the shared list, and return both as they see them (into the status).
"""
from typing import Any

import kopf

GROUP = 'memos.kopf.dev'


@kopf.on.startup()
def fill_the_operators_memo(memo: kopf.Memo, **_: Any) -> None:
    memo.counter = 0
    memo.seen = []


def count(name: str, memo: kopf.Memo) -> dict[str, Any]:
    memo.counter += 1
    memo.seen.append(name)
    return {'counter': memo.counter, 'seen': list(memo.seen)}


@kopf.on.create(GROUP, 'v1', 'memothings', id='create_fn')
def create_fn(name: str, memo: kopf.Memo, **_: Any) -> dict[str, Any]:
    return count(name, memo)


@kopf.on.update(GROUP, 'v1', 'memothings', id='update_fn')
def update_fn(name: str, memo: kopf.Memo, **_: Any) -> dict[str, Any]:
    return count(name, memo)
