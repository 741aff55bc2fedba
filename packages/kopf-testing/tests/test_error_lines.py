"""Which log lines of an operator under test count as its unexpected errors."""
from kopf_testing._logs import find_error_lines, unexpected

LOG = '''\
[2026-01-01 00:00:00,000] kopf.objects         [INFO    ] [ns/x] Handler 'create_fn' succeeded.
[2026-01-01 00:00:00,001] kopf.objects         [ERROR   ] [ns/x] Handler 'create_fn' failed with an exception.
Traceback (most recent call last):
[2026-01-01 00:00:00,002] kopf._core.reactor.r [CRITICAL] Root task 'watcher' is failed: boom
[2026-01-01 00:00:00,003] kopf.objects         [WARNING ] [ns/x] Patching failed with inconsistencies: [ERROR   ]
'''


def test_errors_and_criticals_are_found_by_their_level_only() -> None:
    assert find_error_lines(LOG) == [LOG.splitlines()[1], LOG.splitlines()[3]]


def test_expected_errors_are_matched_by_a_regexp_anywhere_in_the_line() -> None:
    errors = find_error_lines(LOG)
    assert unexpected(errors, [r"Handler 'create_fn' failed"]) == [errors[1]]
    assert unexpected(errors, [r'failed', r'is failed: \w+']) == []
    assert unexpected(errors, []) == errors
