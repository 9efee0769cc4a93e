"""Inflating a compressed input in a thread, ahead of the scan that reads it.

zlib-ng lets go of the GIL while it inflates, so a thread that drives the reader inflates
the next blocks while the reader's thread counts, selects and diagnoses the ones before:
`gzip -dc | grep` runs its two halves side by side too. The thread draws exactly the blocks
the reader would draw itself (the same reader, the same calls), a bounded number ahead, and
the reader's thread takes them in order; warnings travel among them, so their order holds.
The reader inflates ~1 MB a call (inflate.READ_IN), so the thread seldom needs the GIL.
"""

import queue
import threading
from collections.abc import Iterator

DEPTH = 4  # blocks in flight at most (each at most the reader's chunk size); more gained nothing


def read_ahead(items: Iterator, depth: int = DEPTH) -> Iterator:
    """Yield the items of `items` in order, drawn by a thread up to `depth` items ahead; an
    exception it raises is raised here, where its item would have come."""
    done = queue.SimpleQueue()   # (kind, item): 0 an item, 1 the end, 2 an exception
    room = queue.SimpleQueue()   # one token per free place; None: stop
    for _ in range(depth):
        room.put(True)
    stopping = []

    def work():
        try:
            for item in items:
                done.put((0, item))
                if room.get() is None or stopping:
                    return
            done.put((1, None))
        except BaseException as exc:  # noqa: BLE001 - raised in the reader's thread
            done.put((2, exc))

    thread = threading.Thread(target=work, name="dsdiag-inflate", daemon=True)
    thread.start()
    try:
        while True:
            kind, item = done.get()
            if kind == 1:
                return
            if kind == 2:
                raise item
            room.put(True)
            yield item
    finally:
        stopping.append(True)
        room.put(None)
        thread.join()  # the input is closed after this: never under the thread's read
