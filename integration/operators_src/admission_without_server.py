"""An admission handler without a webhook server: the operator must refuse to start."""
from typing import Any

import kopf


@kopf.on.validate('admissionobjs.admission.kopf.dev')
def check(**_: Any) -> None:
    pass
