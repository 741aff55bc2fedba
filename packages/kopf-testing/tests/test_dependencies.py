"""Every runtime dependency that kopf-testing declares is one that its code imports: nothing installed for nothing."""
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
# The distributions whose import name is not their own name, lower-cased, with dashes as underscores.
IMPORT_NAMES = {'kopf_core': 'kopf', 'pyyaml': 'yaml'}


def _declared() -> list[str]:
    text = (PACKAGE / 'pyproject.toml').read_text()
    block = re.search(r'^dependencies = \[(.*?)^\]', text, re.MULTILINE | re.DOTALL)
    assert block is not None, 'no dependencies list in pyproject.toml'
    return [re.split(r'[<>=!~\[ ;]', spec, maxsplit=1)[0] for spec in re.findall(r'^\s*"([^"]+)"', block[1], re.M)]


def _imported() -> set[str]:
    sources = '\n'.join(path.read_text() for path in (PACKAGE / 'src').rglob('*.py'))
    return set(re.findall(r'^\s*(?:import|from)\s+(\w+)', sources, re.MULTILINE))


def test_every_declared_dependency_is_imported() -> None:
    declared = _declared()
    assert 'pytest' in declared  # the parsing found the list
    imported = _imported()
    unused = [name for name in declared
              if IMPORT_NAMES.get(name.lower().replace('-', '_'), name.lower().replace('-', '_')) not in imported]
    assert unused == [], f'declared but never imported by kopf_testing: {unused}; drop them from pyproject.toml'
