"""
The test command's durations as a Markdown report: each step, and the slowest tests.

Reads what ``scripts/test.sh`` leaves in ``.test-results/`` (``steps.tsv`` and the
integration tests' JUnit XML) and prints the report; what each slow test waits for
is for a person to add beside it. Usage::

    python3 scripts/durations.py [RESULTS_DIR] [--slowest N]
"""
import argparse
import csv
import pathlib
import xml.etree.ElementTree as ElementTree

ROOT = pathlib.Path(__file__).resolve().parent.parent


def steps(results: pathlib.Path) -> list[tuple[str, int, str]]:
    with (results / 'steps.tsv').open() as f:
        return [(row['step'], int(row['seconds']), row['result']) for row in csv.DictReader(f, delimiter='\t')]


def slowest(results: pathlib.Path, count: int) -> list[tuple[float, str, str]]:
    """The slowest test cases (time, name, outcome), the setup and teardown of each included."""
    cases = ElementTree.parse(results / 'integration.xml').getroot().iter('testcase')
    timed = []
    for case in cases:
        outcome = 'failed' if case.find('failure') is not None or case.find('error') is not None else (
            'skipped' if case.find('skipped') is not None else 'passed')
        name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        timed.append((float(case.get('time', 0)), name, outcome))
    return sorted(timed, reverse=True)[:count]


def report(results: pathlib.Path, count: int) -> str:
    lines = ['| step | seconds | result |', '|---|---:|---|']
    lines += [f'| {name} | {seconds} | {result} |' for name, seconds, result in steps(results)]
    lines += ['', f'The {count} slowest tests of the pool (setup and teardown included):', '',
              '| seconds | test | outcome |', '|---:|---|---|']
    lines += [f'| {seconds:.0f} | `{name}` | {outcome} |' for seconds, name, outcome in slowest(results, count)]
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('results', nargs='?', type=pathlib.Path, default=ROOT / '.test-results')
    parser.add_argument('--slowest', type=int, default=20)
    args = parser.parse_args()
    print(report(args.results, args.slowest))


if __name__ == '__main__':
    main()
