"""
Admission control: validate and mutate the objects before Kubernetes stores them.

The operator runs a local HTTPS server for the webhooks (with a generated CA;
it uses the magic hostnames of K3d, Minikube and Docker Desktop if it detects
them) and keeps the Validating/MutatingWebhookConfiguration ``auto.kopf.dev``
pointing to it. On exit, the webhooks are removed from the configurations.

Try it::

    kopf run examples/17-admission/admission.py --verbose -n default
    kubectl create -f examples/obj.yaml            # defaults added, a warning shown
    kubectl patch kex kopf-example-1 --type=merge -p '{"spec": {"numbers": [500]}}'   # rejected
"""
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.admission.server = kopf.WebhookAutoServer()
    settings.admission.managed = 'auto.kopf.dev'


@kopf.on.validate('kopfexamples')
def say_hello(warnings: list[str], **_: Any) -> None:
    warnings.append("Verified with the operator's hook.")


@kopf.on.validate('kopfexamples')
def check_numbers(spec: kopf.Spec, **_: Any) -> None:
    if not isinstance(spec.get('numbers', []), list):
        raise kopf.AdmissionError("Numbers must be a list if present.")


@kopf.on.validate('kopfexamples')
def convertible_numbers(spec: kopf.Spec, warnings: list[str], **_: Any) -> None:
    if isinstance(spec.get('numbers', []), list):
        for val in spec.get('numbers', []):
            if not isinstance(val, float):
                try:
                    float(val)
                except ValueError:
                    raise kopf.AdmissionError(f"Cannot convert {val!r} to a number.") from None
                else:
                    warnings.append(f"{val!r} is not a number but can be converted.")


@kopf.on.validate('kopfexamples')
def numbers_range(spec: kopf.Spec, **_: Any) -> None:
    if isinstance(spec.get('numbers', []), list):
        if not all(0 <= float(val) <= 100 for val in spec.get('numbers', [])):
            raise kopf.AdmissionError("Numbers must be below 0..100.", code=499)


@kopf.on.mutate('kopfexamples', operation='CREATE')
def ensure_default_numbers(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
    if 'numbers' not in spec:
        patch.spec['numbers'] = [1, 2, 3]


@kopf.on.mutate('kopfexamples')
def convert_numbers_if_possible(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
    if 'numbers' in spec and isinstance(spec.get('numbers'), list):
        patch.spec['numbers'] = [_maybe_number(v) for v in spec['numbers']]


def _maybe_number(v: Any) -> Any:
    try:
        return float(v)
    except ValueError:
        return v
