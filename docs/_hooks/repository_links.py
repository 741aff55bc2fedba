"""
Links from the pages to the repository's files outside of ``docs/`` (the packages, the examples).

They are useful when the pages are read in the repository, but the site has no such files,
except the examples: each ``examples/NN-topic/`` folder becomes a page of the site (not in the
navigation: the examples page lists them), at the same path as in the repository, with its
README and then its Python files. A link to an example's README or folder goes to that page.

Any other such link becomes its text followed by the file's path; a link to a file that
does not exist in the repository is a warning, so that ``mkdocs build --strict`` fails on it.
"""
from __future__ import annotations

import logging
import pathlib
import posixpath
import re
from typing import Any, Optional

from mkdocs.structure.files import File, Files, InclusionLevel

log = logging.getLogger('mkdocs.plugins.repository_links')

_LINK = re.compile(r'(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)')
_EXAMPLE = re.compile(r'\d\d-[\w-]+')


def on_files(files: Files, config: Any) -> Files:
    for folder in _example_folders(config):
        src_uri = f'examples/{folder.name}/README.md'
        files.append(File.generated(config, src_uri, content=_example_page(folder),
                                    inclusion=InclusionLevel.NOT_IN_NAV))
    return files


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    server.watch(str(_repo_dir(config) / 'examples'))
    return server


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir = pathlib.Path(config['docs_dir']).resolve()
    repo_dir = docs_dir.parent
    # A page of an example stands for the example's folder in the repository.
    base_dir = docs_dir if page.file.abs_src_path is not None else repo_dir
    page_dir = (base_dir / page.file.src_uri).parent
    # Only the prose: the even parts between the code fences.
    parts = re.split(r'(^```.*?^```[ \t]*$)', markdown, flags=re.M | re.S)
    for index in range(0, len(parts), 2):
        parts[index] = _LINK.sub(lambda match: _rewrite(match, page_dir, docs_dir, repo_dir, page), parts[index])
    return ''.join(parts)


def _rewrite(match: re.Match[str], page_dir: pathlib.Path, docs_dir: pathlib.Path,
             repo_dir: pathlib.Path, page: Any) -> str:
    target = match['target']
    if re.match(r'^[a-z][a-z0-9+.-]*:', target) or target.startswith('/'):
        return match[0]  # a URL, or an absolute path: not ours to judge
    path = (page_dir / target).resolve()
    if path == docs_dir or docs_dir in path.parents:
        return match[0]  # a page of the site: MkDocs validates it
    if repo_dir not in path.parents:
        log.warning(f"Doc file '{page.file.src_uri}' links to '{target}', outside of the repository.")
        return match[0]
    if not path.exists():
        log.warning(f"Doc file '{page.file.src_uri}' links to '{target}', which is not in the repository.")
        return match[0]
    relative = path.relative_to(repo_dir).as_posix()
    example = _example_page_uri(relative)
    if example is not None:
        link = posixpath.relpath(example, posixpath.dirname(page.file.src_uri) or '.')
        return f"[{match['text']}]({link}{match['anchor'] or ''})"
    text = match['text']
    return text if text.strip('`') == relative else f"{text} (`{relative}`)"


def _repo_dir(config: Any) -> pathlib.Path:
    return pathlib.Path(config['docs_dir']).resolve().parent


def _example_folders(config: Any) -> list[pathlib.Path]:
    examples = _repo_dir(config) / 'examples'
    return sorted(path for path in examples.iterdir()
                  if _EXAMPLE.fullmatch(path.name) and (path / 'README.md').is_file())


def _example_page_uri(relative: str) -> Optional[str]:
    """The site's page of the example whose folder or README the repository path is, if it is one."""
    match = re.fullmatch(r'examples/(?P<name>\d\d-[\w-]+)(?:/README\.md)?/?', relative)
    return f"examples/{match['name']}/README.md" if match is not None else None


def _example_page(folder: pathlib.Path) -> str:
    """The README of the example, then each of its Python files in a code block."""
    sections = [(folder / 'README.md').read_text().rstrip()]
    for path in sorted(folder.glob('*.py')):
        code = path.read_text().rstrip()
        fence = '`' * max(3, 1 + max((len(run) for run in re.findall(r'`+', code)), default=0))
        sections.append(f"## `{path.name}`\n\n{fence}python\n{code}\n{fence}")
    return '\n\n'.join(sections) + '\n'
