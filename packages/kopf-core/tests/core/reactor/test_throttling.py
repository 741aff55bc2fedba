from kopf._core.reactor.throttling import ErrorThrottler


def test_the_delays_follow_the_sequence_and_repeat_the_last_one_when_exhausted() -> None:
    throttler = ErrorThrottler([1, 2, 3])
    assert [throttler.next_delay() for _ in range(5)] == [1, 2, 3, 3, 3]


def test_no_delays_configured_means_none() -> None:
    assert ErrorThrottler([]).next_delay() is None
