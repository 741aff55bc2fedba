"""
Kopf's own ``kopf`` distribution installed into the same folder as ``kopf-core``: detected and explained.

The site folders here are made by the tests: the ``.dist-info`` folders with
the metadata and the list of files, as installers leave them. The real case (a
virtualenv with both installed) is in the integration tests.
"""
import pathlib
import warnings
from typing import List

import pytest

from kopf._cogs.helpers import installation


def make_dist(site: pathlib.Path, folder: str, name: str, version: str, files: List[str]) -> None:
    dist_info = site / folder
    dist_info.mkdir(parents=True)
    (dist_info / 'METADATA').write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (dist_info / 'RECORD').write_text(''.join(f"{file},,\n" for file in files))


@pytest.fixture()
def site(tmp_path: pathlib.Path) -> pathlib.Path:
    make_dist(tmp_path, 'kopf_core-0.1.0.dist-info', 'kopf-core', '0.1.0', ['kopf/__init__.py', 'kopf/on.py'])
    (tmp_path / 'kopf').mkdir()
    (tmp_path / 'kopf' / '__init__.py').write_text('')
    return tmp_path


def test_kopf_in_the_same_folder_is_detected(site: pathlib.Path) -> None:
    make_dist(site, 'kopf-1.45.2.dist-info', 'kopf', '1.45.2', ['kopf/__init__.py', 'kopf/_kits/__init__.py'])
    assert installation.find_coinstalled_kopf(str(site)) == '1.45.2'


def test_our_satellites_are_not_mistaken_for_kopf(site: pathlib.Path) -> None:
    make_dist(site, 'kopf_client-0.1.0.dist-info', 'kopf-client', '0.1.0', ['kopf_client/__init__.py'])
    make_dist(site, 'kopf_cli-0.1.0.dist-info', 'kopf-cli', '0.1.0', ['kopf_cli/__init__.py'])
    assert installation.find_coinstalled_kopf(str(site)) is None


def test_a_kopf_distribution_without_the_package_is_not_reported(site: pathlib.Path) -> None:
    make_dist(site, 'kopf-9.9.dist-info', 'kopf', '9.9', ['something_else/__init__.py'])
    assert installation.find_coinstalled_kopf(str(site)) is None


def test_kopf_alone_is_not_our_business(tmp_path: pathlib.Path) -> None:
    make_dist(tmp_path, 'kopf-1.45.2.dist-info', 'kopf', '1.45.2', ['kopf/__init__.py'])
    assert installation.find_coinstalled_kopf(str(tmp_path)) is None


def test_a_missing_folder_is_nothing_to_report(tmp_path: pathlib.Path) -> None:
    assert installation.find_coinstalled_kopf(str(tmp_path / 'absent')) is None


def test_the_warning_says_what_to_do_in_one_line(site: pathlib.Path) -> None:
    make_dist(site, 'kopf-1.45.2.dist-info', 'kopf', '1.45.2', ['kopf/__init__.py'])
    with pytest.warns(RuntimeWarning) as records:
        installation.warn_if_coinstalled(str(site / 'kopf' / '__init__.py'))
    message = str(records[0].message)
    assert '\n' not in message
    assert "'kopf' 1.45.2 are both installed in" in message
    assert str(site) in message
    assert 'pip uninstall -y kopf kopf-core && pip install kopf-core' in message


def test_no_warning_without_kopf(site: pathlib.Path) -> None:
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter('always')
        installation.warn_if_coinstalled(str(site / 'kopf' / '__init__.py'))
    assert records == []
