"""
The metrics' own cost, in this process: the recordings of one object's handling, and one scrape.

Run in the ``bench`` environment (it needs kopf-client[metrics])::

    hatch run bench:python -m benchmarks.metrics_cost

The burst's figures with and without ``--metrics`` are the side ``ours-metrics``
of ``python -m benchmarks run``; on a shared 2-core machine their noise is larger
than this cost, which is why it is measured here too.
"""
import timeit

from kopf._cogs.helpers import instruments
from kopf._core.engines.endpoints import metricserving

RESOURCE = 'kopfexamples.kopf.dev'
# One object of a burst: 3 handler runs (create, update, delete), 3 changes' waits,
# and about 8 API requests (its patches, and its share of the lists and watches).
RUNS, WAITS, REQUESTS = 3, 3, 8


def main(number: int = 200_000) -> None:
    run = timeit.timeit(lambda: instruments.record_handler_run('fn', RESOURCE, 'success', 0.012), number=number)
    api = timeit.timeit(lambda: instruments.record_api_request('PATCH', '200', 0.004), number=number)
    wait = timeit.timeit(lambda: instruments.QUEUE_DURATION.observe((RESOURCE,), 0.1), number=number)
    run, api, wait = run / number * 1e6, api / number * 1e6, wait / number * 1e6
    print(f"recording: a handler run {run:.2f} us, an API request {api:.2f} us, a change's wait {wait:.2f} us")
    per_object = RUNS * run + WAITS * wait + REQUESTS * api
    print(f"per object ({RUNS} runs, {WAITS} waits, {REQUESTS} requests): {per_object:.1f} us")
    exporter = metricserving.find_exporter(required=True)
    assert exporter is not None
    scrape = timeit.timeit(exporter.render, number=200) / 200 * 1e3
    print(f"one scrape of prometheus_client's default registry: {scrape:.2f} ms, {len(exporter.render()[1])} bytes")


if __name__ == '__main__':
    main()
