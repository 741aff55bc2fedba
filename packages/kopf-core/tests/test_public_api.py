"""
Every public name of Kopf's API exists here: users' operators import and annotate with them.

The lists below are the source of truth (Kopf 1.45's ``kopf.__all__`` and ``kopf.on``);
if the interface notes of the repository's workspace are present beside it, they must
list the same names, so that the two never drift apart.

Deeper than the names: ``api/kopf-1.45.2.txt`` lists Kopf 1.45.2's parameters of the public
functions and classes, the classes' attributes and the settings, as generated from the
installed release by ``api/listing.py``; the same listing of ours must have them all, except
the known gaps below (each of them is a difference that a user can meet).
"""
import importlib
import importlib.util
import pathlib
import re
from types import ModuleType
from typing import List, Set

import pytest

import kopf
import kopf.on

KOPF_NAMES = """
on lifecycles subhandler register execute daemon timer index configure LogFormat
login_via_pykube login_via_client login_via_async_client login_with_kubeconfig
login_with_service_account LoginError ConnectionInfo AiohttpSession event info warn
exception spawn_tasks run_tasks operator run adopt label not_ all_ any_ none_
get_default_lifecycle set_default_lifecycle build_object_reference build_owner_reference
append_owner_reference remove_owner_reference ErrorsMode AdmissionError
WebhookClientConfigService WebhookClientConfig Operation UserInfo Headers SSLPeer
WebhookFn WebhookServerProtocol WebhookServer WebhookK3dServer WebhookMinikubeServer
WebhookDockerDesktopServer WebhookNgrokTunnel WebhookAutoServer WebhookAutoTunnel
PermanentError TemporaryError HandlerTimeoutError HandlerRetriesError OperatorRegistry
get_default_registry set_default_registry PRESENT ABSENT OperatorSettings
DiffBaseStorage AnnotationsDiffBaseStorage StatusDiffBaseStorage MultiDiffBaseStorage
ProgressRecord ProgressStorage AnnotationsProgressStorage StatusProgressStorage
MultiProgressStorage SmartProgressStorage RawEventType RawEvent RawBody Status Spec Meta
Body BodyEssence Labels Annotations ObjectReference OwnerReference Memo Index Store
Logger ObjectLogger LocalObjectLogger FieldSpec FieldPath Diff DiffItem DiffOperation
HandlerId Reason Patch PatchFn DaemonStopped DaemonStoppingReason
SyncDaemonStopperChecker AsyncDaemonStopperChecker Resource EVERYTHING
""".split()

# Reachable though not in Kopf's __all__.
KOPF_EXTRA_NAMES = ['harmonize_naming', 'adjust_namespace', 'testing']

KOPF_ON_NAMES = """
resume create update delete field event index daemon timer startup cleanup login probe
validate mutate subhandler register
ActivityDecorator ChangingDecorator DaemonDecorator IndexingDecorator TimerDecorator
WatchingDecorator WebhookDecorator
""".split()

NOTES = pathlib.Path(__file__).resolve().parents[3].parent / 'shared' / 'notes' / 'public-api.md'


def _words_of_section(text: str, heading: str) -> Set[str]:
    section = text.split(heading, 1)[1].split('\n## ', 1)[0]
    blocks = re.findall(r'```\n(.*?)```', section, flags=re.DOTALL)
    return {word for block in blocks for word in block.split()}


def test_the_lists_match_the_notes_when_present() -> None:
    if not NOTES.exists():
        return  # a standalone checkout: the embedded lists alone are the reference
    text = NOTES.read_text(encoding='utf-8')
    assert _words_of_section(text, '## `kopf` (`__all__`)') == set(KOPF_NAMES)
    on_section = text.split('## `kopf.on`', 1)[1].split('\n## ', 1)[0]
    for name in KOPF_ON_NAMES:
        assert re.search(rf'\b{name}\b', on_section), name


def test_the_embedded_list_is_complete() -> None:
    assert len(KOPF_NAMES) == len(set(KOPF_NAMES)) == 108


@pytest.mark.parametrize('name', KOPF_NAMES + KOPF_EXTRA_NAMES)
def test_kopf_lists_the_name(name: str) -> None:
    assert name in dir(kopf)


@pytest.mark.parametrize('name', KOPF_NAMES)
def test_kopf_resolves_the_name_or_names_the_package_to_install(name: str) -> None:
    # The names of the add-on packages are resolved if installed, or say what to install.
    try:
        value = getattr(kopf, name)
    except ImportError as e:
        assert 'pip install kopf-' in str(e)
    else:
        assert value is not None


@pytest.mark.parametrize('name', KOPF_ON_NAMES)
def test_kopf_on_has_the_name(name: str) -> None:
    assert name in dir(kopf.on)
    assert getattr(kopf.on, name) is not None


def test_the_lifecycles_module_has_the_documented_lifecycles() -> None:
    module = importlib.import_module('kopf').lifecycles
    for name in ['all_at_once', 'one_by_one', 'randomized', 'shuffled', 'asap']:
        assert callable(getattr(module, name))


def test_unknown_names_fail_as_attributes() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = kopf.no_such_name


# Deeper: parameters, attributes, settings.

API_DIR = pathlib.Path(__file__).parent / 'api'
UPSTREAM_LISTING = API_DIR / 'kopf-1.45.2.txt'

# Kopf 1.45.2's items that ours still lacks: the gaps, to close (then remove them from here).
KNOWN_GAPS: Set[str] = set()  # none left: every item of Kopf 1.45.2 is ours too


def _load_listing_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location('kopf_api_listing', API_DIR / 'listing.py')
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_items(path: pathlib.Path) -> List[str]:
    lines = path.read_text(encoding='utf-8').splitlines()
    return [line for line in lines if line and not line.startswith('#')]


def _unresolvable_names(names: List[str]) -> Set[str]:
    """The names of the add-on packages that are not installed here: their details cannot be checked."""
    result = set()
    for name in [*names, 'testing']:
        try:
            getattr(kopf, name)
        except ImportError:
            result.add(name)
    return result


def _root_name(item: str) -> str:
    return re.split(r'[.(]', item[len('kopf.'):], maxsplit=1)[0] if item.startswith('kopf.') else ''


def test_the_upstream_listing_has_the_names_of_the_notes() -> None:
    listing = _load_listing_module()
    names = listing.read_top_level_names(str(UPSTREAM_LISTING))
    assert set(names) == set(KOPF_NAMES) | {'harmonize_naming', 'adjust_namespace'}


def test_kopf_has_the_parameters_attributes_and_settings_of_kopf_1_45_2() -> None:
    listing = _load_listing_module()
    names = listing.read_top_level_names(str(UPSTREAM_LISTING))
    theirs = set(_read_items(UPSTREAM_LISTING))
    ours = set(listing.list_interface(names))
    unchecked = _unresolvable_names(names)
    missing = {item for item in theirs - ours if _root_name(item) not in unchecked}
    assert sorted(missing - KNOWN_GAPS) == []


def test_the_known_gaps_are_kopf_1_45_2s_items() -> None:
    assert sorted(KNOWN_GAPS - set(_read_items(UPSTREAM_LISTING))) == []
