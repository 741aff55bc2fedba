"""
The top of a py-spy profile: the functions with the most samples, own and inclusive.

Record the ``ours`` operator of a benchmark run (py-spy attaches to the first
``kopf run`` of ``bench_operator.py``; lifecycle and burst share that process)::

    hatch run bench:run --objects 1000 --restart-objects 5 --idle-seconds 1 --repeats 1 \\
        --sides ours --variants status --out /tmp/profiled &
    py-spy record --rate 200 --format raw --nonblocking -o burst.raw \\
        -p "$(until pgrep -f 'bin/kopf run .*bench_operator.py'; do sleep 0.2; done | head -1)"
    python -m benchmarks.profile_top burst.raw 40
"""
import collections
import re
import sys

_MARKERS = ('site-packages/', 'src/', 'lib/python3.11/', 'lib/python3.12/', 'lib/python3.13/')


def frame_name(frame: str) -> str:
    """``func (/long/path/pkg/file.py:123)`` → ``func (pkg/file.py)``."""
    match = re.match(r'(.*?) \((.*?)(?::\d+)?\)$', frame)
    if not match:
        return frame
    func, path = match.groups()
    for marker in _MARKERS:
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f'{func} ({path})'


def summarise(lines: list[str], limit: int) -> str:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rstrip('\n').rpartition(' ')
        samples = int(count)
        total += samples
        frames = [frame_name(frame) for frame in stack.split(';')]
        own[frames[-1]] += samples
        for frame in set(frames):
            inclusive[frame] += samples
    out = [f'samples: {total} (on-CPU only)', '', '== own time (the function itself) ==']
    out += [f'{100 * n / total:6.2f}%  {name}' for name, n in own.most_common(limit)]
    out += ['', '== inclusive time (with callees) ==']
    out += [f'{100 * n / total:6.2f}%  {name}' for name, n in inclusive.most_common(limit)]
    return '\n'.join(out)


if __name__ == '__main__':
    with open(sys.argv[1]) as file:
        print(summarise(file.readlines(), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
