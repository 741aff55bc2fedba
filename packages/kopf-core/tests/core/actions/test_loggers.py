"""
The per-object loggers, the formatters, and the process-wide logging setup.

Records are made by the real loggers and captured by pytest's ``caplog`` (as
the operators' own tests do); the formatters are applied to those records
directly. ``configure()`` changes the process-wide root logger, so its tests
restore the root logger's state afterwards.
"""
import io
import json
import logging
import re
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.actions import loggers

NAMESPACED_BODY: Dict[str, Any] = {
    'apiVersion': 'kopf.dev/v1',
    'kind': 'KopfExample',
    'metadata': {'name': 'kopf-example-1', 'namespace': 'default', 'uid': 'uid-123', 'labels': {'a': 'b'}},
    'spec': {'field': 'value'},
}
CLUSTER_BODY: Dict[str, Any] = {
    'apiVersion': 'kopf.dev/v1',
    'kind': 'ClusterKopfExample',
    'metadata': {'name': 'cluster-example-1', 'uid': 'uid-456'},
}


@pytest.fixture()
def settings() -> OperatorSettings:
    return OperatorSettings()


@pytest.fixture()
def object_record(caplog: pytest.LogCaptureFixture, settings: OperatorSettings) -> logging.LogRecord:
    caplog.set_level(logging.DEBUG)
    loggers.ObjectLogger(body=NAMESPACED_BODY, settings=settings).info("Hello, %s!", 'world')
    return caplog.records[-1]


@pytest.fixture()
def cluster_record(caplog: pytest.LogCaptureFixture, settings: OperatorSettings) -> logging.LogRecord:
    caplog.set_level(logging.DEBUG)
    loggers.ObjectLogger(body=CLUSTER_BODY, settings=settings).info("Hello, %s!", 'world')
    return caplog.records[-1]


@pytest.fixture()
def plain_record(caplog: pytest.LogCaptureFixture) -> logging.LogRecord:
    caplog.set_level(logging.DEBUG)
    logging.getLogger('kopf.activities.startup').info("Hello, %s!", 'world')
    return caplog.records[-1]


@pytest.fixture()
def restored_logging() -> Iterator[None]:
    """Let configure() change the process-wide logging; undo it after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    low_levels = {name: logging.getLogger(name).level for name in ['asyncio', 'aiohttp', 'urllib3', 'kubernetes']}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, low_level in low_levels.items():
        logging.getLogger(name).setLevel(low_level)


def kopf_handlers() -> List[logging.Handler]:
    return [h for h in logging.getLogger().handlers if isinstance(h.formatter, loggers.ObjectPrefixingFormatter)]


#
# Loggers' names and formats.
#

def test_object_messages_go_to_the_objects_logger(object_record: logging.LogRecord) -> None:
    assert object_record.name == 'kopf.objects'


@pytest.mark.parametrize('activity', ['startup', 'cleanup', 'authentication', 'probe'])
def test_activity_loggers_are_named_after_the_activities(activity: str) -> None:
    assert loggers.ACTIVITY_LOGGER_NAMES[activity] == f'kopf.activities.{activity}'


@pytest.mark.parametrize('log_format, expected', [
    pytest.param(loggers.LogFormat.FULL, '[%(asctime)s] %(name)-20.20s [%(levelname)-8.8s] %(message)s', id='full'),
    pytest.param(loggers.LogFormat.PLAIN, '%(message)s', id='plain'),
])
def test_text_formats_are_as_documented(log_format: loggers.LogFormat, expected: str) -> None:
    assert log_format.value == expected


#
# Object loggers.
#

def test_object_messages_have_no_prefix_in_the_records(object_record: logging.LogRecord) -> None:
    assert object_record.getMessage() == "Hello, world!"


def test_object_records_carry_the_namespaced_reference(object_record: logging.LogRecord) -> None:
    assert vars(object_record)['k8s_ref'] == {
        'apiVersion': 'kopf.dev/v1',
        'kind': 'KopfExample',
        'name': 'kopf-example-1',
        'uid': 'uid-123',
        'namespace': 'default',
    }


def test_object_records_carry_the_cluster_scoped_reference_without_namespace(
        cluster_record: logging.LogRecord,
) -> None:
    assert vars(cluster_record)['k8s_ref'] == {
        'apiVersion': 'kopf.dev/v1',
        'kind': 'ClusterKopfExample',
        'name': 'cluster-example-1',
        'uid': 'uid-456',
    }


def test_object_records_carry_the_settings(object_record: logging.LogRecord, settings: OperatorSettings) -> None:
    assert vars(object_record)['settings'] is settings


def test_reference_is_not_affected_by_later_changes_of_the_body(
        caplog: pytest.LogCaptureFixture, settings: OperatorSettings,
) -> None:
    body: Dict[str, Any] = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'old', 'namespace': 'ns'}}
    logger = loggers.ObjectLogger(body=body, settings=settings)
    body['metadata']['name'] = 'new'
    with caplog.at_level(logging.INFO):
        logger.info("Hello.")
    assert vars(caplog.records[-1])['k8s_ref']['name'] == 'old'


@pytest.mark.parametrize('cls, skipped', [
    pytest.param(loggers.ObjectLogger, False, id='object-logger'),
    pytest.param(loggers.LocalObjectLogger, True, id='local-object-logger'),
])
def test_only_local_object_loggers_mark_records_as_not_posted(
        caplog: pytest.LogCaptureFixture, settings: OperatorSettings, cls: type, skipped: bool,
) -> None:
    with caplog.at_level(logging.INFO):
        cls(body=NAMESPACED_BODY, settings=settings).info("Hello.")
    assert vars(caplog.records[-1])['k8s_skip'] is skipped


def test_callers_extra_fields_are_kept_but_cannot_override_the_reference(
        caplog: pytest.LogCaptureFixture, settings: OperatorSettings,
) -> None:
    with caplog.at_level(logging.INFO):
        loggers.ObjectLogger(body=NAMESPACED_BODY, settings=settings).info(
            "Hello.", extra={'custom': 123, 'k8s_ref': {'name': 'fake'}})
    assert vars(caplog.records[-1])['custom'] == 123
    assert vars(caplog.records[-1])['k8s_ref']['name'] == 'kopf-example-1'


#
# Text formatters.
#

@pytest.mark.parametrize('record_fixture, expected', [
    pytest.param('object_record', "[default/kopf-example-1] Hello, world!", id='namespaced'),
    pytest.param('cluster_record', "[cluster-example-1] Hello, world!", id='cluster-scoped'),
    pytest.param('plain_record', "Hello, world!", id='not-an-object'),
])
def test_prefixing_formatter_prefixes_only_object_messages(
        request: pytest.FixtureRequest, record_fixture: str, expected: str,
) -> None:
    record = request.getfixturevalue(record_fixture)
    formatter = loggers.ObjectPrefixingFormatter(loggers.LogFormat.PLAIN.value)
    assert formatter.format(record) == expected


def test_prefixing_formatter_can_be_flat(object_record: logging.LogRecord) -> None:
    formatter = loggers.ObjectPrefixingFormatter(loggers.LogFormat.PLAIN.value, prefix=False)
    assert formatter.format(object_record) == "Hello, world!"


def test_prefixing_formatter_leaves_the_record_unchanged(object_record: logging.LogRecord) -> None:
    loggers.ObjectPrefixingFormatter(loggers.LogFormat.PLAIN.value).format(object_record)
    assert object_record.message == "Hello, world!"


def test_full_format_has_the_time_logger_level_prefix_and_message(object_record: logging.LogRecord) -> None:
    formatter = loggers.ObjectPrefixingFormatter(loggers.LogFormat.FULL.value)
    text = formatter.format(object_record)
    assert re.fullmatch(
        r'\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] kopf\.objects {8} \[INFO    \] '
        r'\[default/kopf-example-1\] Hello, world!', text)


#
# JSON formatter.
#

def test_json_object_messages_have_the_documented_fields(object_record: logging.LogRecord) -> None:
    data = json.loads(loggers.ObjectJsonFormatter().format(object_record))
    assert list(data) == ['message', 'object', 'severity', 'timestamp']
    assert data['message'] == "Hello, world!"
    assert data['object'] == vars(object_record)['k8s_ref']
    assert data['severity'] == 'info'
    assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}', data['timestamp'])


def test_json_plain_messages_have_no_object_field(plain_record: logging.LogRecord) -> None:
    data = json.loads(loggers.ObjectJsonFormatter().format(plain_record))
    assert list(data) == ['message', 'severity', 'timestamp']


def test_json_reference_goes_under_the_configured_key(object_record: logging.LogRecord) -> None:
    data = json.loads(loggers.ObjectJsonFormatter(refkey='k8s-obj').format(object_record))
    assert 'object' not in data
    assert data['k8s-obj']['name'] == 'kopf-example-1'


def test_json_messages_are_prefixed_only_when_asked(object_record: logging.LogRecord) -> None:
    data = json.loads(loggers.ObjectJsonFormatter(prefix=True).format(object_record))
    assert data['message'] == "[default/kopf-example-1] Hello, world!"


@pytest.mark.parametrize('level, severity', [
    pytest.param(logging.DEBUG, 'debug', id='debug'),
    pytest.param(logging.WARNING, 'warning', id='warning'),
    pytest.param(logging.ERROR, 'error', id='error'),
])
def test_json_severity_is_the_lowercase_level(caplog: pytest.LogCaptureFixture, level: int, severity: str) -> None:
    with caplog.at_level(logging.DEBUG):
        logging.getLogger('kopf.test').log(level, "Hello.")
    data = json.loads(loggers.ObjectJsonFormatter().format(caplog.records[-1]))
    assert data['severity'] == severity


def test_json_includes_the_traceback_of_exceptions(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger('kopf.test').exception("Failed.")
    data = json.loads(loggers.ObjectJsonFormatter().format(caplog.records[-1]))
    assert 'ValueError: boom' in data['exc_info']


def test_json_includes_extra_fields_but_not_the_internal_ones(
        caplog: pytest.LogCaptureFixture, settings: OperatorSettings,
) -> None:
    with caplog.at_level(logging.INFO):
        loggers.ObjectLogger(body=NAMESPACED_BODY, settings=settings).info("Hello.", extra={'custom': 123})
    data = json.loads(loggers.ObjectJsonFormatter().format(caplog.records[-1]))
    assert data['custom'] == 123
    assert not {'settings', 'k8s_ref', 'k8s_skip'} & set(data)


#
# Formatter selection.
#

@pytest.mark.parametrize('log_format, log_prefix, expected', [
    pytest.param(loggers.LogFormat.PLAIN, None, "[default/kopf-example-1] Hello, world!", id='plain-default'),
    pytest.param(loggers.LogFormat.PLAIN, True, "[default/kopf-example-1] Hello, world!", id='plain-prefixed'),
    pytest.param(loggers.LogFormat.PLAIN, False, "Hello, world!", id='plain-flat'),
    pytest.param(loggers.LogFormat.JSON, None, "Hello, world!", id='json-default'),
    pytest.param(loggers.LogFormat.JSON, True, "[default/kopf-example-1] Hello, world!", id='json-prefixed'),
    pytest.param(loggers.LogFormat.JSON, False, "Hello, world!", id='json-flat'),
])
def test_prefixing_by_default_is_on_for_text_and_off_for_json(
        object_record: logging.LogRecord, log_format: loggers.LogFormat, log_prefix: bool, expected: str,
) -> None:
    formatter = loggers.make_formatter(log_format=log_format, log_prefix=log_prefix)
    text = formatter.format(object_record)
    message = json.loads(text)['message'] if log_format is loggers.LogFormat.JSON else text
    assert message == expected


def test_unknown_formats_are_refused() -> None:
    with pytest.raises(ValueError, match=r"Unsupported log format"):
        loggers.make_formatter(log_format='xml')  # type: ignore[arg-type]


#
# Process-wide configuration.
#

@pytest.mark.usefixtures('restored_logging')
@pytest.mark.parametrize('kwargs, level', [
    pytest.param({}, logging.INFO, id='default'),
    pytest.param({'verbose': True}, logging.DEBUG, id='verbose'),
    pytest.param({'debug': True}, logging.DEBUG, id='debug'),
    pytest.param({'quiet': True}, logging.WARNING, id='quiet'),
])
def test_configuring_sets_the_root_level(kwargs: Dict[str, Any], level: int) -> None:
    loggers.configure(**kwargs)
    assert logging.getLogger().level == level


@pytest.mark.usefixtures('restored_logging')
@pytest.mark.parametrize('kwargs, level', [
    pytest.param({}, logging.WARNING, id='default'),
    pytest.param({'verbose': True}, logging.WARNING, id='verbose'),
    pytest.param({'quiet': True}, logging.WARNING, id='quiet'),
    pytest.param({'debug': True}, logging.NOTSET, id='debug'),
])
@pytest.mark.parametrize('name', ['asyncio', 'aiohttp'])
def test_low_level_loggers_are_shown_only_when_debugging(kwargs: Dict[str, Any], level: int, name: str) -> None:
    loggers.configure(**kwargs)
    assert logging.getLogger(name).level == level
    assert logging.getLogger(name).getEffectiveLevel() == max(level, logging.getLogger().level)


@pytest.mark.usefixtures('restored_logging')
def test_configuring_again_replaces_the_handler_instead_of_adding_one() -> None:
    loggers.configure()
    loggers.configure(log_format=loggers.LogFormat.JSON)
    handlers = kopf_handlers()
    assert len(handlers) == 1
    assert isinstance(handlers[0].formatter, loggers.ObjectJsonFormatter)


@pytest.mark.usefixtures('restored_logging')
def test_configured_output_goes_to_the_stderr_of_the_configuration_time(
        monkeypatch: pytest.MonkeyPatch, settings: OperatorSettings,
) -> None:
    configured, replaced = io.StringIO(), io.StringIO()
    monkeypatch.setattr('sys.stderr', configured)
    loggers.configure(log_format=loggers.LogFormat.PLAIN, log_prefix=True)
    monkeypatch.setattr('sys.stderr', replaced)  # after the configuration, as test runners do (as in Kopf)
    loggers.ObjectLogger(body=NAMESPACED_BODY, settings=settings).info("Hello.")
    assert configured.getvalue() == "[default/kopf-example-1] Hello.\n"
    assert replaced.getvalue() == ""


@pytest.mark.usefixtures('restored_logging')
def test_configured_output_goes_to_the_current_stderr_once_the_bound_one_is_closed(
        monkeypatch: pytest.MonkeyPatch, settings: OperatorSettings,
) -> None:
    configured, current = io.StringIO(), io.StringIO()
    monkeypatch.setattr('sys.stderr', configured)
    loggers.configure(log_format=loggers.LogFormat.PLAIN, log_prefix=True)
    configured.close()  # e.g. the capture of a finished KopfRunner
    monkeypatch.setattr('sys.stderr', current)
    loggers.ObjectLogger(body=NAMESPACED_BODY, settings=settings).info("Hello.")
    loggers.ObjectLogger(body=NAMESPACED_BODY, settings=settings).info("Again.")
    assert current.getvalue() == "[default/kopf-example-1] Hello.\n[default/kopf-example-1] Again.\n"


@pytest.mark.usefixtures('restored_logging')
@pytest.mark.parametrize('log_format, log_prefix, log_refkey, expected_type_and_prefix', [
    pytest.param(loggers.LogFormat.FULL, False, None, (loggers.ObjectPrefixingFormatter, False), id='full'),
    pytest.param(loggers.LogFormat.PLAIN, True, None, (loggers.ObjectPrefixingFormatter, True), id='plain'),
    pytest.param(loggers.LogFormat.JSON, None, 'k8s', (loggers.ObjectJsonFormatter, False), id='json'),
])
def test_configuring_uses_the_requested_format(
        log_format: loggers.LogFormat, log_prefix: bool, log_refkey: str,
        expected_type_and_prefix: Tuple[type, bool],
) -> None:
    loggers.configure(log_format=log_format, log_prefix=log_prefix, log_refkey=log_refkey)
    formatter = kopf_handlers()[0].formatter
    expected_type, expected_prefix = expected_type_and_prefix
    assert isinstance(formatter, loggers.ObjectPrefixingFormatter)
    assert type(formatter) is expected_type
    assert formatter.prefix is expected_prefix
