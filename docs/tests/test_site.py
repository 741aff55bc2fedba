"""
The built site as a reader sees it: the decorators' options, the docstrings' markup, the examples.

Inputs: the site built strictly into a temporary directory (the ``built_site`` fixture), and
the public objects themselves, imported, for what they accept at runtime. Outputs: the text
and the links of the built HTML pages. No cluster is needed.

- Every function whose keyword arguments are ``**options: Unpack[SomeTypedDict]`` shows
  each of the TypedDict's fields in its table of parameters, with its meaning and its default,
  and no page shows an ``Unpack[...]`` of an object whose options are not listed so.
- No page shows a Sphinx role of the docstrings (``:class:`X```) as text.
- The examples page links every example folder to a page of its own with its files.
"""
from __future__ import annotations

import html
import importlib
import inspect
import itertools
import pathlib
import re
from typing import Any, Optional

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(path for path in (REPO / 'examples').iterdir() if path.is_dir() and re.match(r'\d\d-', path.name))

_HEADING = re.compile(r'<h\d id="(?P<id>[\w.]+)" class="doc doc-heading">')
_ROW = re.compile(r'<tr class="doc-section-item">(?P<cells>.*?)</tr>', re.S)
_CELL = re.compile(r'<td>(?P<content>.*?)</td>', re.S)
_UNPACK = re.compile(r'^Unpack\[(?P<name>\w+)\]$')
_ROLE = re.compile(r':(class|func|mod|meth|data|attr|exc|obj):[`\w]')


def text_of(markup: str) -> str:
    """The text of an HTML fragment, as a browser shows it (without the scripts and styles)."""
    markup = re.sub(r'<(script|style)\b.*?</\1>', '', markup, flags=re.S)
    return html.unescape(re.sub(r'<[^>]+>', '', markup))


def sections(page: str) -> dict[str, str]:
    """The documented objects of a reference page by their ids: each from its heading to the next one."""
    headings = list(_HEADING.finditer(page))
    bounds = itertools.pairwise([*(heading.start() for heading in headings), len(page)])
    return {heading['id']: page[start:end] for heading, (start, end) in zip(headings, bounds, strict=True)}


def parameters(section: str) -> dict[str, tuple[str, str]]:
    """The rows of the section's parameter tables: the name, and its description and default as text."""
    rows: dict[str, tuple[str, str]] = {}
    for row in _ROW.finditer(section):
        cells = [' '.join(text_of(cell['content']).split()) for cell in _CELL.finditer(row['cells'])]
        if len(cells) == 4:  # name, type, description, default
            rows[cells[0]] = (cells[2], cells[3])
    return rows


def import_object(path: str) -> Any:
    """The object of a dotted path, from its longest importable module; None if there is none."""
    parts = path.split('.')
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module('.'.join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            obj = getattr(obj, name, None)
        return obj
    return None


def unpacked_options(obj: Any) -> Optional[dict[str, bool]]:
    """The options of ``**kwargs: Unpack[SomeTypedDict]`` by name (and whether required), if the function has it."""
    if not inspect.isfunction(obj):
        return None
    fn = inspect.unwrap(obj)
    for parameter in inspect.signature(fn, follow_wrapped=False).parameters.values():
        annotation = parameter.annotation if isinstance(parameter.annotation, str) else ''
        match = _UNPACK.match(annotation)
        if parameter.kind is parameter.VAR_KEYWORD and match is not None:
            typed_dict = fn.__globals__[match['name']]
            return {name: name in typed_dict.__required_keys__ for name in typed_dict.__annotations__}
    return None


def reference_pages(site: pathlib.Path) -> list[pathlib.Path]:
    return sorted((site / 'reference').glob('**/index.html'))


def test_every_unpacked_option_is_listed_with_its_meaning_and_default(built_site: pathlib.Path) -> None:
    problems: list[str] = []
    checked: set[str] = set()
    for page in reference_pages(built_site):
        for ident, section in sections(page.read_text()).items():
            options = unpacked_options(import_object(ident))
            if options is None:
                if 'Unpack[' in text_of(section):
                    problems.append(f"{ident}: shows Unpack[...], but is not a function that takes such options")
                continue
            checked.add(ident)
            rows = parameters(section)
            for name, required in options.items():
                description, default = rows.get(name, ('', ''))
                if name not in rows:
                    problems.append(f"{ident}: the option {name}= is not in its parameters")
                elif not description:
                    problems.append(f"{ident}: the option {name}= has no meaning (a docstring under the field)")
                elif default != ('required' if required else 'None'):
                    problems.append(f"{ident}: the option {name}= shows the default {default!r}")
    assert not problems, '\n'.join(problems)
    assert {'kopf.on.create', 'kopf.on.startup', 'kopf.on.field', 'kopf.daemon', 'kopf.register'} <= checked


@pytest.mark.parametrize('markup, shown', [
    ('<p>Raises :class:<code>LoginError</code> if it fails.</p>', True),
    ('<p>See :func:`kopf.event`.</p>', True),
    ('<p>Raises <code>LoginError</code>; the ratio is 1:2.</p>', False),
], ids=['code-span', 'backticks', 'none'])
def test_a_role_in_the_text_is_found(markup: str, shown: bool) -> None:
    assert bool(_ROLE.search(text_of(markup))) == shown


def test_no_page_shows_a_sphinx_role(built_site: pathlib.Path) -> None:
    pages = sorted(built_site.glob('**/*.html'))
    shown = [f"{page.relative_to(built_site)}: ...{text[max(0, match.start() - 40):match.end() + 40]}..."
             for page in pages for text in [text_of(page.read_text())] for match in _ROLE.finditer(text)]
    assert pages and not shown, '\n'.join(shown)


@pytest.mark.parametrize('folder', EXAMPLES, ids=[folder.name for folder in EXAMPLES])
def test_the_examples_page_links_to_each_example(built_site: pathlib.Path, folder: pathlib.Path) -> None:
    page = (built_site / 'examples' / 'index.html').read_text()
    assert f'<a href="{folder.name}/">{folder.name}</a>' in page
    example = text_of((built_site / 'examples' / folder.name / 'index.html').read_text())
    for path in sorted(folder.glob('*.py')):
        assert path.name in example and path.read_text().strip().splitlines()[-1].strip() in example
