"""The sharding benchmark's own parts: what its proxies count, and how its rows are shown."""
import pathlib
import ssl

from benchmarks.sharding import table
from integration.watchcounting import CountingProxy


def proxy(tmp_path: pathlib.Path) -> CountingProxy:
    return CountingProxy('https://127.0.0.1:1', ssl.create_default_context(), tmp_path / 'journal', plural='things')


def test_the_objects_of_watch_events_are_noted_in_their_order(tmp_path: pathlib.Path) -> None:
    counting = proxy(tmp_path)
    for kind, uid in [('ADDED', 'u1'), ('MODIFIED', 'u2'), ('MODIFIED', 'u1'), ('DELETED', 'u2')]:
        counting._note(f'{{"type": "{kind}", "object": {{"metadata": {{"uid": "{uid}"}}}}}}'.encode())
    assert counting.uids == ['u1', 'u2', 'u1', 'u2']
    assert counting.received == 4


def test_bookmarks_and_errors_are_not_events_of_objects(tmp_path: pathlib.Path) -> None:
    counting = proxy(tmp_path)
    counting._note(b'{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}}')
    counting._note(b'{"type": "ERROR", "object": {"kind": "Status", "code": 410}}')
    assert counting.received == 0


def test_the_table_shows_each_replica_with_its_events_per_object() -> None:
    rows = [{'mode': 'server-side', 'replicas': 2, 'replica': index, 'objects': 300, 'events': events,
             'events_per_object': round(events / 300, 2), 'cpu_seconds': 0.5, 'peak_rss_mib': 70.0}
            for index, events in enumerate([290, 310])]
    lines = table(rows).splitlines()
    assert lines[0] == '| mode | replicas | replica | events received | per object | CPU s | peak RSS MiB |'
    assert lines[2:] == ['| server-side | 2 | 0 | 290 | 0.97 | 0.5 | 70.0 |',
                         '| server-side | 2 | 1 | 310 | 1.03 | 0.5 | 70.0 |']
