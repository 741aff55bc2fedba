"""
The credentials of one cluster, written under ``pki/`` before any server starts.

Two certificate authorities, both forgotten once the certificates are signed
(neither key is ever written: nothing signs anything later):

- the cluster's CA (``ca.pem``): the API server's serving certificate, the admin's
  client certificate; the API server's ``--client-ca-file`` and the clients' trust;
- etcd's CA (``etcd-ca.pem``): etcd's certificate (its client and peer ports) and
  the API server's client certificate for etcd; etcd trusts no other CA, so etcd
  is open to the API server only, not to the admin's certificate nor to anyone
  who can merely connect to 127.0.0.1.

Besides: the service-account signing key pair, and the bearer tokens
(``tokens.csv``, the API server's ``--token-auth-file``). Every file is 0600.
"""
from . import _certificates, _commands, _files, _ports

ADMIN_USER = 'admin'
NON_ADMIN_USER = 'user'
ADMIN_GROUPS = ('system:masters',)

LOOPBACK_HOSTS = ('localhost', _ports.HOST)


def write_credentials(layout: _commands.Layout, *, admin_token: str, user_token: str) -> None:
    """Generate and write every key, certificate and token the servers and the clients need."""
    cluster_ca = _certificates.Authority('kopf-controlplane-ca')
    _files.write_private_file(layout.pem('ca'), cluster_ca.cert_pem)
    cluster_ca.issue_server('localhost', hosts=LOOPBACK_HOSTS).write(
        layout.pem('apiserver'), layout.pem('apiserver-key'))
    cluster_ca.issue_client(ADMIN_USER, groups=ADMIN_GROUPS).write(layout.pem('admin'), layout.pem('admin-key'))
    del cluster_ca  # its key goes with it: the CA signs nothing after this

    etcd_ca = _certificates.Authority('kopf-controlplane-etcd-ca')
    _files.write_private_file(layout.pem('etcd-ca'), etcd_ca.cert_pem)
    etcd_ca.issue_server('etcd', hosts=LOOPBACK_HOSTS, client=True).write(layout.pem('etcd'), layout.pem('etcd-key'))
    etcd_ca.issue_client('kube-apiserver-etcd-client').write(
        layout.pem('apiserver-etcd-client'), layout.pem('apiserver-etcd-client-key'))
    del etcd_ca

    _certificates.generate_signing_key().write(layout.pem('sa'), layout.pem('sa-key'))

    # The CSV format of --token-auth-file: token,user,uid[,"group1,group2"].
    _files.write_private_file(layout.tokens, (
        f'{admin_token},{ADMIN_USER},{ADMIN_USER},"{",".join(ADMIN_GROUPS)}"\n'
        f'{user_token},{NON_ADMIN_USER},{NON_ADMIN_USER}\n'
    ))
