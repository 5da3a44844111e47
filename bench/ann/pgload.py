"""PostgreSQL side of the ANN benches: binary COPY of vectors, relation sizes, server memory sampling."""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import numpy as np
import psutil

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)


def copy_binary_rows(ids: np.ndarray, doc_ids: np.ndarray, vectors: np.ndarray) -> bytes:
    """One COPY BINARY payload: per row 3 fields; pgvector's binary form is int16 dim, int16 0, float4[dim]."""
    dim = vectors.shape[1]
    row = np.dtype(
        [
            ("fields", ">i2"),
            ("id_len", ">i4"),
            ("id", ">i8"),
            ("doc_len", ">i4"),
            ("doc", ">i4"),
            ("v_len", ">i4"),
            ("v_dim", ">i2"),
            ("v_unused", ">i2"),
            ("v", ">f4", (dim,)),
        ]
    )  # packed, no padding
    rows = np.zeros(len(ids), dtype=row)
    rows["fields"], rows["id_len"], rows["id"] = 3, 8, ids
    rows["doc_len"], rows["doc"] = 4, doc_ids
    rows["v_len"], rows["v_dim"], rows["v"] = 4 + 4 * dim, dim, vectors
    return COPY_HEADER + rows.tobytes() + COPY_TRAILER


def copy_vectors(cursor, table: str, ids: np.ndarray, doc_ids: np.ndarray, vectors: np.ndarray) -> None:
    """Append rows to ``table (id bigint, doc_id integer, v vector(D))`` with one binary COPY."""
    with cursor.copy(f"COPY {table} (id, doc_id, v) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.write(copy_binary_rows(ids, doc_ids, vectors))


class ServerMemorySampler:
    """Peak summed RSS and PSS over the postmaster and its children, sampled in a thread.

    The parallel HNSW build keeps its graph in dynamic shared memory, which RSS
    counts once per attached process; PSS splits shared pages among the
    processes that map them, so its sum is the server's real footprint.
    """

    def __init__(self, postmaster_pid: int | None, interval: float = 0.5) -> None:
        self.pid, self.interval = postmaster_pid, interval
        self.peak_rss = self.peak_pss = self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> tuple[int, int, int]:
        if self.pid is None:
            return 0, 0, 0
        root = psutil.Process(self.pid)
        rss = pss = count = 0
        for process in [root, *root.children(recursive=True)]:
            try:
                info = process.memory_full_info()  # Linux: reads /proc/PID/smaps_rollup
            except psutil.Error:
                continue
            rss, pss, count = rss + info.rss, pss + getattr(info, "pss", info.rss), count + 1
        return rss, pss, count

    def _run(self) -> None:
        while not self._stop.is_set():
            rss, pss, count = self.sample()
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            self.peak_processes = max(self.peak_processes, count)
            self._stop.wait(self.interval)

    def __enter__(self) -> ServerMemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def postmaster_pid(cursor) -> int | None:
    cursor.execute("SELECT setting FROM pg_settings WHERE name = 'data_directory'")
    pid_file = Path(cursor.fetchone()[0]) / "postmaster.pid"
    try:
        return int(pid_file.read_text().split()[0])
    except OSError:
        return None  # a remote DATABASE_URL: memory is not measured


def relation_bytes(cursor, name: str) -> int:
    cursor.execute("SELECT pg_total_relation_size(%s)", [name])
    return int(cursor.fetchone()[0])


def gb(value: float) -> str:
    if value < 1e9:
        return f"{value / 1e6:,.0f} MB"
    return f"{value / 1e9:,.2f} GB" if value < 1e12 else f"{value / 1e12:,.2f} TB"
