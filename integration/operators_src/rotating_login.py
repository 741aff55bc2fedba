"""
An operator whose credentials come from a login handler that reads a token file.

The first credentials expire a few seconds after login (``TOKEN_TTL``), so the
operator must log in again and pick up whatever token is in the file then.
"""
import datetime
import os
from typing import Any, Optional

import kopf

SERVER = os.environ['TEST_SERVER']
CA_PATH = os.environ['TEST_CA_PATH']
TOKEN_PATH = os.environ['TEST_TOKEN_PATH']
TTL = float(os.environ.get('TEST_TOKEN_TTL', '0'))
FIRST_TOKEN = os.environ.get('TEST_FIRST_TOKEN')  # e.g. an invalid one, to be replaced after a 401
_logins = 0


@kopf.on.login()
def login_fn(logger: kopf.ObjectLogger, **_: Any) -> kopf.ConnectionInfo:
    global _logins
    _logins += 1
    token = FIRST_TOKEN if FIRST_TOKEN and _logins == 1 else open(TOKEN_PATH).read().strip()
    expiration: Optional[datetime.datetime] = None
    if TTL and _logins == 1:
        expiration = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=TTL)
    logger.info(f"Login #{_logins} with the token ending in ...{token[-4:]}, expiring at {expiration}.")
    return kopf.ConnectionInfo(server=SERVER, ca_path=CA_PATH, token=token, expiration=expiration)


@kopf.on.create('kopfexamples')
def create_fn(**_: Any) -> dict[str, str]:
    return {'message': 'created'}
