"""
Kubernetes Operator Pythonic Framework (Kopf).

The public API is what this module exports; everything under ``kopf._cogs``
and ``kopf._core`` is internal and can change at any time. The names that
belong to the optional add-on packages (webhooks, testing, the client's login
functions, the CLI) resolve lazily, and say which package to install when
it is missing.
"""
import importlib
from typing import TYPE_CHECKING, Any

from kopf import clients, on
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.configs.diffbase import (
    AnnotationsDiffBaseStorage,
    DiffBaseStorage,
    MultiDiffBaseStorage,
    StatusDiffBaseStorage,
)
from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    MultiProgressStorage,
    ProgressRecord,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)
from kopf._cogs.helpers import installation as _installation
from kopf._cogs.helpers.typedefs import Logger, RawBody, RawEvent, RawEventType, RawMeta, RawPatch
from kopf._cogs.structs.bodies import (
    Annotations,
    Body,
    BodyEssence,
    Labels,
    Meta,
    ObjectReference,
    OwnerReference,
    Spec,
    Status,
)
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError, Vault
from kopf._cogs.structs.dicts import FieldPath, FieldSpec
from kopf._cogs.structs.diffs import Diff, DiffItem, DiffOperation
from kopf._cogs.structs.ephemera import Memo
from kopf._cogs.structs.hierarchies import (
    adjust_namespace,
    adopt,
    append_owner_reference,
    build_object_reference,
    build_owner_reference,
    harmonize_naming,
    label,
    remove_owner_reference,
)
from kopf._cogs.structs.namespaces import check_namespace_patterns as check_namespace_patterns  # for kopf-cli
from kopf._cogs.structs.patches import Patch, PatchFn
from kopf._cogs.structs.references import EVERYTHING, Resource
from kopf._cogs.structs.reviews import (
    Headers,
    Operation,
    SSLPeer,
    UserInfo,
    WebhookClientConfig,
    WebhookClientConfigService,
    WebhookFn,
    WebhookServerProtocol,
)
from kopf._core.actions import lifecycles
from kopf._core.actions.errors import (
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)
from kopf._core.actions.invocation import HandlerSignatureError
from kopf._core.actions.lifecycles import get_default_lifecycle, set_default_lifecycle
from kopf._core.actions.loggers import LocalObjectLogger, LogFormat, ObjectLogger, configure
from kopf._core.actions.subhandling import execute
from kopf._core.engines.background.stoppers import (
    AsyncDaemonStopperChecker,
    DaemonStopped,
    DaemonStoppingReason,
    SyncDaemonStopperChecker,
)
from kopf._core.engines.coordination.leases import LeaseError as LeaseError  # for kopf-cli
from kopf._core.engines.endpoints.probing import LivenessEndpointError as LivenessEndpointError  # for kopf-cli
from kopf._core.engines.events.posting import event, exception, info, warn
from kopf._core.engines.indexing import Index, Store
from kopf._core.engines.webhooks.admission import AdmissionError
from kopf._core.engines.webhooks.webhookconfigs import AdmissionSetupError as AdmissionSetupError  # for kopf-cli
from kopf._core.intents.callbacks import all_, any_, none_, not_
from kopf._core.intents.causes import Reason
from kopf._core.intents.filters import ABSENT, PRESENT, MetaFilterToken
from kopf._core.intents.handlers import ErrorsMode, HandlerId
from kopf._core.intents.registries import OperatorRegistry, get_default_registry, set_default_registry
from kopf._core.reactor.running import operator, run, run_tasks, spawn_tasks
from kopf.on import daemon, index, register, subhandler, timer

# Installed into one folder with Kopf's own "kopf", the files of both are mixed: say what to do.
_installation.warn_if_coinstalled(__file__)

if TYPE_CHECKING:
    # The types of the add-ons' names, for the users' type checkers. At run time, they are
    # imported lazily by __getattr__ below, so that the core works without the add-ons.
    from kopf_client import AiohttpSession as AiohttpSession
    from kopf_client import login_via_async_client as login_via_async_client
    from kopf_client import login_via_client as login_via_client
    from kopf_client import login_via_pykube as login_via_pykube
    from kopf_client import login_with_kubeconfig as login_with_kubeconfig
    from kopf_client import login_with_service_account as login_with_service_account
    from kopf_webhooks import WebhookAutoServer as WebhookAutoServer
    from kopf_webhooks import WebhookAutoTunnel as WebhookAutoTunnel
    from kopf_webhooks import WebhookDockerDesktopServer as WebhookDockerDesktopServer
    from kopf_webhooks import WebhookK3dServer as WebhookK3dServer
    from kopf_webhooks import WebhookMinikubeServer as WebhookMinikubeServer
    from kopf_webhooks import WebhookNgrokTunnel as WebhookNgrokTunnel
    from kopf_webhooks import WebhookServer as WebhookServer

# Names provided by the optional add-on packages: name -> (module, attribute, package to install).
_LAZY = {
    'login_with_kubeconfig': ('kopf_client', 'login_with_kubeconfig', 'kopf-client'),
    'login_with_service_account': ('kopf_client', 'login_with_service_account', 'kopf-client'),
    'login_via_pykube': ('kopf_client', 'login_via_pykube', 'kopf-client[full-auth]'),
    'login_via_client': ('kopf_client', 'login_via_client', 'kopf-client[full-auth]'),
    'login_via_async_client': ('kopf_client', 'login_via_async_client', 'kopf-client'),
    'AiohttpSession': ('kopf_client', 'AiohttpSession', 'kopf-client'),
    'WebhookServer': ('kopf_webhooks', 'WebhookServer', 'kopf-webhooks'),
    'WebhookK3dServer': ('kopf_webhooks', 'WebhookK3dServer', 'kopf-webhooks'),
    'WebhookMinikubeServer': ('kopf_webhooks', 'WebhookMinikubeServer', 'kopf-webhooks'),
    'WebhookAutoServer': ('kopf_webhooks', 'WebhookAutoServer', 'kopf-webhooks'),
    'WebhookNgrokTunnel': ('kopf_webhooks', 'WebhookNgrokTunnel', 'kopf-webhooks[ngrok]'),
    'WebhookAutoTunnel': ('kopf_webhooks', 'WebhookAutoTunnel', 'kopf-webhooks'),
    'WebhookDockerDesktopServer': ('kopf_webhooks', 'WebhookDockerDesktopServer', 'kopf-webhooks'),
}


def __getattr__(name: str) -> Any:
    if name == '__version__':  # lazily: the package metadata is not cheap to read at import
        return _installation.get_version()
    if name in ('cli', 'testing'):  # real submodules, which import their add-on packages
        return importlib.import_module(f'kopf.{name}')
    if name not in _LAZY:
        raise AttributeError(f"module 'kopf' has no attribute {name!r}")
    module_name, attr, package = _LAZY[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ImportError(f"kopf.{name} needs the {package!r} package: pip install {package}") from e
    return module if attr is None else getattr(module, attr)


def __dir__() -> list[str]:
    # The lazy names are public too (but not in __all__: a star-import must not need the add-ons).
    return sorted({*globals(), *_LAZY, 'cli', 'testing', '__version__'})


__all__ = [
    'ABSENT',
    'EVERYTHING',
    'PRESENT',
    'AdmissionError',
    'Annotations',
    'AnnotationsDiffBaseStorage',
    'AnnotationsProgressStorage',
    'AsyncDaemonStopperChecker',
    'Body',
    'BodyEssence',
    'ConnectionInfo',
    'DaemonStopped',
    'DaemonStoppingReason',
    'Diff',
    'DiffBaseStorage',
    'DiffItem',
    'DiffOperation',
    'ErrorsMode',
    'FieldPath',
    'FieldSpec',
    'HandlerId',
    'HandlerRetriesError',
    'HandlerSignatureError',
    'HandlerTimeoutError',
    'Headers',
    'Index',
    'Labels',
    'LocalObjectLogger',
    'LogFormat',
    'Logger',
    'LoginError',
    'Memo',
    'Meta',
    'MetaFilterToken',
    'MultiDiffBaseStorage',
    'MultiProgressStorage',
    'ObjectLogger',
    'ObjectReference',
    'Operation',
    'OperatorRegistry',
    'OperatorSettings',
    'OwnerReference',
    'Patch',
    'PatchFn',
    'PermanentError',
    'ProgressRecord',
    'ProgressStorage',
    'RawBody',
    'RawEvent',
    'RawEventType',
    'RawMeta',
    'RawPatch',
    'Reason',
    'Resource',
    'SSLPeer',
    'SmartProgressStorage',
    'Spec',
    'Status',
    'StatusDiffBaseStorage',
    'StatusProgressStorage',
    'Store',
    'SyncDaemonStopperChecker',
    'TemporaryError',
    'UserInfo',
    'Vault',
    'WebhookAutoServer',
    'WebhookAutoTunnel',
    'WebhookClientConfig',
    'WebhookClientConfigService',
    'WebhookDockerDesktopServer',
    'WebhookFn',
    'WebhookK3dServer',
    'WebhookMinikubeServer',
    'WebhookNgrokTunnel',
    'WebhookServer',
    'WebhookServerProtocol',
    'adjust_namespace',
    'adopt',
    'all_',
    'any_',
    'append_owner_reference',
    'build_object_reference',
    'build_owner_reference',
    'clients',
    'configure',
    'daemon',
    'event',
    'exception',
    'execute',
    'get_default_lifecycle',
    'get_default_registry',
    'harmonize_naming',
    'index',
    'info',
    'label',
    'lifecycles',
    'none_',
    'not_',
    'on',
    'operator',
    'register',
    'remove_owner_reference',
    'run',
    'run_tasks',
    'set_default_lifecycle',
    'set_default_registry',
    'spawn_tasks',
    'subhandler',
    'timer',
    'warn',
]
