"""The attribution of the API server's request counts: grouping, background, and the harness's own share."""
import collections

import pytest

from benchmarks.kubeapi import Tally
from benchmarks.metrics import events_posted, group_requests, is_activity, parse_watch_lists, subtract_tally, total
from kopf_testing.controlplane import RequestKey


def key(verb: str, resource: str, code: str = '200', subresource: str = '') -> RequestKey:
    return RequestKey(verb=verb, resource=resource, code=code, subresource=subresource)


def test_requests_are_keyed_by_verb_and_resource_summed_over_status_codes() -> None:
    grouped = group_requests({key('PATCH', 'benchmarkeds'): 3, key('PATCH', 'benchmarkeds', code='409'): 1})
    assert grouped == {'PATCH benchmarkeds': 4}


def test_subresources_are_keyed_apart_from_their_resource() -> None:
    grouped = group_requests({key('PATCH', 'benchmarkeds'): 1, key('PATCH', 'benchmarkeds', subresource='status'): 2})
    assert grouped == {'PATCH benchmarkeds': 1, 'PATCH benchmarkeds/status': 2}


def test_non_resource_urls_are_keyed_by_their_path() -> None:
    assert group_requests({key('GET', '', subresource='apis'): 1}) == {'GET /apis': 1}


def test_lease_renewals_of_the_control_plane_are_not_attributed() -> None:
    assert group_requests({key('PUT', 'leases'): 5}) == {}


def test_relistings_of_services_by_the_controller_manager_are_not_attributed() -> None:
    assert group_requests({key('LIST', 'services'): 1, key('LIST', 'benchmarkeds'): 1}) == {'LIST benchmarkeds': 1}


def test_the_harness_requests_are_subtracted_and_what_cancels_out_is_dropped() -> None:
    tally: Tally = collections.Counter({('POST', 'benchmarkeds'): 10, ('LIST', 'benchmarkeds'): 1})
    requests = subtract_tally({'POST benchmarkeds': 10, 'LIST benchmarkeds': 2, 'PATCH benchmarkeds': 7}, tally)
    assert requests == {'LIST benchmarkeds': 1, 'PATCH benchmarkeds': 7}


def test_more_harness_requests_than_counted_show_as_negative_not_hidden() -> None:
    tally: Tally = collections.Counter({('DELETE', 'benchmarkeds'): 3})
    assert subtract_tally({'DELETE benchmarkeds': 2}, tally) == {'DELETE benchmarkeds': -1}


@pytest.mark.parametrize('events, expected', [
    pytest.param(False, 5, id='without-events'),
    pytest.param(True, 2, id='only-events'),
])
def test_totals_separate_the_posted_events(events: bool, expected: int) -> None:
    requests = {'PATCH benchmarkeds': 4, 'LIST benchmarkeds': 1, 'POST events': 2}
    assert total(requests, events=events) == expected


def test_totals_can_leave_out_watches() -> None:
    assert total({'WATCH benchmarkeds': 1, 'LIST benchmarkeds': 1}, watches=False) == 1


def test_posted_events_are_counted_over_all_verbs() -> None:
    assert events_posted({'POST events': 2, 'PATCH events': 1, 'POST benchmarkeds': 9}) == 3


def test_totals_leave_out_non_resource_requests() -> None:
    assert total({'GET /apis': 1, 'GET /api': 1, 'LIST benchmarkeds': 1}) == 1


@pytest.mark.parametrize('requests, expected', [
    ({}, False),
    ({'GET /apis': 1, 'GET /openapi/v3': 2}, False),  # the controller manager's discovery, at any moment
    ({'WATCH benchmarkeds': 1}, False),  # counted when it ends, not when the operator works
    ({'LIST benchmarkeds': 1}, True),
    ({'POST events': 1}, True),
    ({'PATCH benchmarkeds/status': -1}, True),  # miscounted, but not nothing
])
def test_activity_is_any_request_to_a_resource_but_watches(requests: dict[str, int], expected: bool) -> None:
    assert is_activity(requests) is expected


def test_a_watch_list_in_a_namespace_counts_as_the_operators_listing() -> None:
    text = (b'apiserver_watch_list_duration_seconds_count{group="bench.kopf.dev",resource="benchmarkeds",'
            b'scope="namespace",version="v1"} 2\n'
            b'apiserver_watch_list_duration_seconds_count{group="",resource="pods",scope="cluster",version="v1"} 7\n'
            b'apiserver_watch_list_duration_seconds_sum{group="",resource="pods",scope="namespace",version="v1"} 0.5\n')
    grouped = group_requests(parse_watch_lists(text))
    assert grouped == {'WATCHLIST benchmarkeds': 2}  # not the control plane's cluster-wide ones, nor the sums
    assert is_activity(grouped) and total(grouped, watches=False) == 2
