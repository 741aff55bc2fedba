"""
Links from the pages to the repository's files outside of ``docs/`` (the packages, the examples).

They are useful when the pages are read in the repository, but the site has no such files.
In the site, such a link becomes its text followed by the file's path; a link to a file that
does not exist in the repository is a warning, so that ``mkdocs build --strict`` fails on it.
"""
from __future__ import annotations

import logging
import pathlib
import re
from typing import Any

log = logging.getLogger('mkdocs.plugins.repository_links')

_LINK = re.compile(r'(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)')
_FENCE = re.compile(r'^(```|~~~)', re.M)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir = pathlib.Path(config['docs_dir']).resolve()
    repo_dir = docs_dir.parent
    page_dir = (docs_dir / page.file.src_path).parent
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
        log.warning(f"Doc file '{page.file.src_path}' links to '{target}', outside of the repository.")
        return match[0]
    if not path.exists():
        log.warning(f"Doc file '{page.file.src_path}' links to '{target}', which is not in the repository.")
        return match[0]
    relative = path.relative_to(repo_dir).as_posix()
    text = match['text']
    return text if text.strip('`') == relative else f"{text} (`{relative}`)"
