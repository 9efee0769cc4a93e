"""`not_near`: a line near a hit that says what the hit really was vetoes it, in a short paste
and behind 20,000 healthy lines (where the prefilter picks the lines the rule reads)."""

from noise import diagnose_behind_noise as _diagnose

POLL = ('[rank1]:[W318 10:00:41.929037914 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0 Rank 1] '
        'Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down '
        'too early), with error: Connection reset by peer')
SOCKET = ('[rank1]:[W318 10:00:41.915284135 TCPStore.cpp:125] [c10d] recvValue failed on '
          'SocketImpl(fd=135, addr=[node-1]:48750, remote=[node-0]:29500): Connection reset by peer')


def test_socket_failure_alone_is_a_store_failure(tmp_path):
    assert _diagnose(tmp_path, [SOCKET])["rule"] == "connection_failure.store_socket_closed"


def test_heartbeat_poll_before_or_after_vetoes_it(tmp_path):
    for lines in ([POLL, SOCKET], [SOCKET, POLL]):
        for noise in (0, 20000):
            d = _diagnose(tmp_path, lines, noise)
            assert d["rule"] != "connection_failure.store_socket_closed", (lines, noise)
            assert d["category"] == "none"
