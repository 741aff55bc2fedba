"""Check the built wheels and sdists of the five packages before they are installed.

    python scripts/check_dist.py DIST                    # what each archive holds
    python scripts/check_dist.py DIST --requirements X   # the third-party requirements of ours, with extras X

Each package must have one wheel and one sdist of one common version; each archive
carries the licence text, the README and the marker of typed packages; each package
depends on its siblings within one minor series, so that mismatched versions cannot
be installed together. Every problem is printed (one line each); the exit code is 1 if any.
"""

from __future__ import annotations

import argparse
import email.message
import email.parser
import pathlib
import sys
import tarfile
import zipfile

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

PACKAGES = {  # distribution name -> import name
    'kopf-core': 'kopf',
    'kopf-client': 'kopf_client',
    'kopf-cli': 'kopf_cli',
    'kopf-testing': 'kopf_testing',
    'kopf-webhooks': 'kopf_webhooks',
}
# The licence at the top of the repository; each package holds a copy (a link would be kept as a link
# in the sdist, and unpackers refuse links that leave the archive).
LICENCE_TEXT = (pathlib.Path(__file__).parent.parent / 'LICENSE').read_text()


def find_one(dist: pathlib.Path, pattern: str, problems: list[str]) -> pathlib.Path | None:
    found = sorted(dist.glob(pattern))
    if len(found) != 1:
        problems.append(f'Expected one file {pattern} in {dist}, found {len(found)}: rebuild with scripts/build.sh.')
        return None
    return found[0]


def read_metadata(wheel: pathlib.Path) -> tuple[email.message.Message, dict[str, bytes]]:
    with zipfile.ZipFile(wheel) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    metadata_name = next(name for name in files if name.endswith('.dist-info/METADATA'))
    return email.parser.BytesParser().parsebytes(files[metadata_name]), files


def check_wheel(wheel: pathlib.Path, import_name: str, problems: list[str]) -> email.message.Message:
    metadata, files = read_metadata(wheel)
    licences = [name for name in files if name.endswith('.dist-info/licenses/LICENSE')]
    if not licences or files[licences[0]].decode() != LICENCE_TEXT:
        problems.append(f'{wheel.name}: .dist-info/licenses/LICENSE is not the LICENSE at the top of the repository.')
    if f'{import_name}/py.typed' not in files:
        problems.append(f'{wheel.name}: no {import_name}/py.typed (the package would be untyped for its users).')
    for field in ('License-Expression', 'License-File', 'Requires-Python', 'Description-Content-Type'):
        if not metadata.get(field):
            problems.append(f'{wheel.name}: the metadata has no {field}.')
    return metadata


def check_sdist(sdist: pathlib.Path, import_name: str, problems: list[str]) -> None:
    root = sdist.name.removesuffix('.tar.gz')
    with tarfile.open(sdist) as archive:
        members = {member.name: member for member in archive.getmembers()}
        licence = members.get(f'{root}/LICENSE')
        if licence is None or not licence.isfile():
            problems.append(f'{sdist.name}: no LICENSE file at its top (copy the top-level LICENSE into the package).')
        else:
            extracted = archive.extractfile(licence)
            if extracted is None or extracted.read().decode() != LICENCE_TEXT:
                problems.append(f'{sdist.name}: LICENSE is not the LICENSE at the top of the repository'
                                f' (copy it into the package).')
    for name in ('README.md', 'CHANGELOG.md', 'pyproject.toml', f'src/{import_name}/py.typed'):
        if f'{root}/{name}' not in members:
            problems.append(f'{sdist.name}: {name} is missing.')


def check_sibling_pins(wheel_name: str, metadata: email.message.Message, problems: list[str]) -> None:
    version = Version(metadata['Version'])
    next_series = Version(f'{version.major}.{version.minor + 1}.0')
    for line in metadata.get_all('Requires-Dist') or []:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) not in PACKAGES:
            continue
        if version not in requirement.specifier or next_series in requirement.specifier:
            problems.append(f'{wheel_name}: {line!r} must allow {version} and exclude {next_series}'
                            f' (siblings are pinned to one minor series).')


def check_archives(dist: pathlib.Path) -> list[str]:
    problems: list[str] = []
    versions: set[str] = set()
    for name, import_name in PACKAGES.items():
        stem = name.replace('-', '_')
        wheel = find_one(dist, f'{stem}-*.whl', problems)
        sdist = find_one(dist, f'{stem}-*.tar.gz', problems)
        if wheel is not None:
            metadata = check_wheel(wheel, import_name, problems)
            check_sibling_pins(wheel.name, metadata, problems)
            versions.add(metadata['Version'])
        if sdist is not None:
            check_sdist(sdist, import_name, problems)
    if len(versions) > 1:
        problems.append(f'The packages are built with different versions: {sorted(versions)}; release them together.')
    return problems


def third_party_requirements(dist: pathlib.Path, extras: list[str]) -> list[str]:
    """The requirements of our wheels that are not ours, for the given extras and this interpreter."""
    wanted: set[str] = set()
    for wheel in sorted(dist.glob('*.whl')):
        metadata, _ = read_metadata(wheel)
        for line in metadata.get_all('Requires-Dist') or []:
            requirement = Requirement(line)
            if canonicalize_name(requirement.name) in PACKAGES:
                continue
            environments = [{'extra': extra} for extra in ['', *extras]]
            if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                requirement.marker = None
                wanted.add(str(requirement))
    return sorted(wanted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('dist', type=pathlib.Path, help='the directory with the built wheels and sdists')
    parser.add_argument('--requirements', nargs='*', metavar='EXTRA',
                        help='print the third-party requirements of our wheels (with these extras) and exit')
    args = parser.parse_args()
    if args.requirements is not None:
        print('\n'.join(third_party_requirements(args.dist, args.requirements)))
        return 0
    problems = check_archives(args.dist)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f'All {len(PACKAGES)} wheels and {len(PACKAGES)} sdists hold their licence, README and py.typed;'
              f' the siblings are pinned to one minor series.')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
