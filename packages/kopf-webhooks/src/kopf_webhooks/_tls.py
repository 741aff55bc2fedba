"""
The TLS of a webhook server: the certificate files followed for changes, and their loading into SSL contexts.

The served state (:class:`Tls`) is kept by the server while it serves; the files are re-read
by the server at intervals, and their contents are loaded here (never the files directly,
which may change between the reads).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import pathlib
import ssl
import tempfile
from typing import Iterator, List, Optional, Union

StrPath = Union[str, 'os.PathLike[str]']

@dataclasses.dataclass(frozen=True)
class TlsContents:
    cert: Optional[bytes]
    pkey: Optional[bytes]
    ca: Optional[bytes]
    digest: str  # of all of them: to notice changes without keeping the key in memory for long


@dataclasses.dataclass(frozen=True)
class TlsFiles:
    """The files of a server's TLS that are followed for changes (none for generated certificates)."""
    certfile: Optional[StrPath] = None
    pkeyfile: Optional[StrPath] = None
    cafile: Optional[StrPath] = None

    def __bool__(self) -> bool:
        return self.certfile is not None or self.pkeyfile is not None or self.cafile is not None

    def read(self) -> TlsContents:
        contents = [pathlib.Path(path).read_bytes() if path is not None else None
                    for path in (self.certfile, self.pkeyfile, self.cafile)]
        hasher = hashlib.sha256()
        for content in contents:
            hasher.update(b'-' if content is None else b'%d:%s' % (len(content), content))
        cert, pkey, ca = contents
        return TlsContents(cert=cert, pkey=pkey, ca=ca, digest=hasher.hexdigest())


@dataclasses.dataclass
class Tls:
    """The state of a serving server's TLS: what is served and reported, and the files it came from."""
    context: Optional[ssl.SSLContext]
    cadata: Optional[bytes]
    files: TlsFiles
    digest: Optional[str]  # of the files' contents that are served now
    # What failed last, not to repeat the warnings at every check: the files' reading, or their contents.
    read_error: Optional[str] = None
    rejected: Optional[str] = None  # the digest of the contents that could not be loaded


def load_cert_chain(
        context: ssl.SSLContext,
        chain: bytes,
        pkey: bytes,
        password: Optional[str],
        *,
        check: bool = False,
) -> None:
    """
    Load the certificate & key into the context, from the given contents (not from the files, which may change).

    With ``check``, the same contents are loaded into a scratch context first: a failure
    there leaves the served context as it was (loading a mismatching pair into it would not).
    Loading into a context that serves is safe: the connections made so far keep their copies.
    """
    with _temporary_files(chain, pkey) as (certpath, pkeypath):
        if check:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(certpath, pkeypath, password)
        context.load_cert_chain(certpath, pkeypath, password)



@contextlib.contextmanager
def _temporary_files(*contents: bytes) -> Iterator[List[str]]:
    """
    Put the data into files for the time of the block.

    :meth:`ssl.SSLContext.load_cert_chain` reads only files, not in-memory data.
    The files are private to the user and are deleted right after the loading.
    """
    with tempfile.TemporaryDirectory(prefix='kopf-webhooks-') as tmpdir:
        paths: List[str] = []
        for index, content in enumerate(contents):
            path = os.path.join(tmpdir, f'{index}.pem')
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'wb') as f:
                f.write(content)
            paths.append(path)
        yield paths
