"""
Free TCP ports on the loopback interface.

The OS picks a free port when binding to port 0; the socket is closed at once so
that a server can take the port. Another process may grab the port in between:
that race is unavoidable without passing sockets to the servers (which etcd and
kube-apiserver do not accept), so the callers retry the whole start instead.
"""
import socket

HOST = '127.0.0.1'


def find_free_ports(count: int) -> list[int]:
    """Distinct free ports: the sockets are held open together so the OS never repeats one."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
