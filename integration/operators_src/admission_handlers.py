"""
Admission handlers for the tests, selected per object by the label ``mode``.

The server listens on 127.0.0.1 with a self-signed certificate, which the
managed configurations (named ``$ADMISSION_MANAGED``) give to the apiserver as
the CA bundle. Each handler states its outcome in the log, so that the tests
can see it was the operator (not the apiserver) that decided.
"""
import os
from typing import Any

import kopf

PLURAL = 'admissionobjs.admission.kopf.dev'


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.admission.server = kopf.WebhookServer(addr='127.0.0.1', host='127.0.0.1')
    settings.admission.managed = os.environ['ADMISSION_MANAGED']


@kopf.on.validate(PLURAL, id='rejecting', labels={'mode': 'reject'})
def rejecting(spec: kopf.Spec, **_: Any) -> None:
    raise kopf.AdmissionError(f"Meh! I don't like {spec.get('field')!r}. Change the field.", code=499)


@kopf.on.validate(PLURAL, id='warning', labels={'mode': 'warn'})
def warning(dryrun: bool, userinfo: kopf.UserInfo, warnings: list[str], logger: Any, **_: Any) -> None:
    logger.info(f"warning: dryrun={dryrun}")
    warnings.append(f"Checked for {userinfo.get('username')} with dryrun={dryrun}.")


@kopf.on.mutate(PLURAL, id='mutating', labels={'mode': 'mutate'}, operation='CREATE')
def mutating(patch: kopf.Patch, **_: Any) -> None:
    patch.spec['numbers'] = [1, 2, 3]
    patch.meta.labels['mutated'] = 'yes'


@kopf.on.validate(PLURAL, id='crashing', labels={'mode': 'crash'})
def crashing(**_: Any) -> None:
    raise ZeroDivisionError("Something went really wrong.")


@kopf.on.validate(PLURAL, id='tolerant', labels={'mode': 'tolerant'}, ignore_failures=True)
def tolerant(**_: Any) -> None:
    raise ZeroDivisionError("It does not matter.")


@kopf.on.validate(PLURAL, id='persistent', labels={'mode': 'persistent'}, persistent=True)
def persistent(**_: Any) -> None:
    pass
