"""
The public names are typed for the users' ``mypy --strict``, including those of the add-ons.

Inputs: an operator file as a user writes it (handlers, settings, the embedding
API, the webhook servers, the testing runner, the login functions), checked by
mypy in strict mode in the environment where all the packages are installed.
Outputs: no errors, and the revealed types of the add-ons' names are their own
classes, not ``Any`` (the names resolve lazily at run time).
"""
import pathlib
import subprocess
import sys
import textwrap

USER_FILE = textwrap.dedent('''
    import asyncio
    import logging
    from typing import Any

    import kopf
    from kopf.testing import KopfRunner


    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.queueing.worker_limit = 10
        settings.watching.label_selectors['kopfexamples'] = 'app=demo'
        settings.admission.server = kopf.WebhookServer(port=9443)
        settings.admission.server = kopf.WebhookAutoTunnel()


    @kopf.on.login()
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_kubeconfig(**kwargs)


    @kopf.on.create('kopfexamples')
    def create_fn(spec: kopf.Spec, logger: kopf.Logger, **_: Any) -> dict[str, Any]:
        logger.info(f"{spec.get('field')}")
        return {'message': 'hello'}


    @kopf.daemon('kopfexamples')
    def sync_daemon(stopped: kopf.DaemonStopped, **_: Any) -> None:
        while not stopped:
            if stopped.wait(10):
                break


    @kopf.daemon('kopfexamples')
    async def async_daemon(stopped: kopf.DaemonStopped, **_: Any) -> None:
        while not stopped.is_set():
            await stopped.wait(10)


    def embedded() -> None:
        asyncio.run(kopf.operator(clusterwide=True, standalone=True, priority=10))
        kopf.run(namespaces=['default'], liveness_endpoint='http://0.0.0.0:8080/healthz')


    def in_tests() -> None:
        with KopfRunner(['run', '-A', __file__], timeout=60) as runner:
            pass
        assert runner.exit_code == 0
        assert 'hello' in runner.output


    reveal_type(kopf.WebhookServer)
    reveal_type(kopf.AiohttpSession)
    reveal_type(KopfRunner)
    reveal_type(kopf.login_with_kubeconfig)
    reveal_type(kopf.run)
    logging.getLogger().info('typed')
''')

BAD_FILE = textwrap.dedent('''
    import kopf
    kopf.run(standalone='yes')
    kopf.WebhookServer(port='9443')
''')


def run_mypy(path: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-m', 'mypy', '--strict', '--no-incremental', '--python-version=3.10',
                           str(path)], capture_output=True, text=True, cwd=path.parent, timeout=300)


def test_a_users_operator_passes_mypy_strict_with_typed_addons(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'my_operator.py'
    path.write_text(USER_FILE)
    result = run_mypy(path)
    assert 'error:' not in result.stdout, result.stdout
    revealed = [line for line in result.stdout.splitlines() if 'Revealed type is' in line]
    assert len(revealed) == 5, result.stdout
    assert all('"Any"' not in line for line in revealed), result.stdout
    assert '-> kopf_webhooks' in revealed[0]
    assert '-> aiohttp' in revealed[1] or 'AiohttpSession' in revealed[1]
    assert '-> kopf_testing' in revealed[2]
    assert 'ConnectionInfo' in revealed[3]
    assert 'standalone: bool | None' in revealed[4]


def test_wrong_types_of_the_public_names_are_caught(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'my_operator.py'
    path.write_text(BAD_FILE)
    result = run_mypy(path)
    assert 'Argument "standalone" to "run" has incompatible type "str"' in result.stdout, result.stdout
    assert 'Argument "port" to "WebhookServer" has incompatible type "str"' in result.stdout, result.stdout
