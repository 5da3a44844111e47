"""run_overlapped: the next batch read ahead and the last one stored behind on the helper thread, in order, with the
cancel and error cases a shard relies on (a resumed shard starts after the last batch stored); at_once: two calls at
the same time, one on the helper, with their errors."""

from __future__ import annotations

import threading
import time

import pytest

from alignment.jobs.helper_io import RunIO, at_once, run_overlapped


class Recorder:
    def __init__(self, fail_work_on: int | None = None, fail_store_on: int | None = None, cancel_after: int | None = None):
        self.events: list[tuple[str, int, str]] = []
        self.stored: list[int] = []
        self.fail_work_on, self.fail_store_on, self.cancel_after = fail_work_on, fail_store_on, cancel_after

    def _note(self, step: str, batch: int) -> None:
        self.events.append((step, batch, threading.current_thread().name.split("_")[0]))

    def read(self, batch: int) -> int:
        self._note("read", batch)
        return batch * 10

    def work(self, batch: int, read: int) -> int:
        self._note("work", batch)
        if batch == self.fail_work_on:
            raise MemoryError(f"batch {batch}")
        return read + 1

    def store(self, batch: int, result: int) -> None:
        time.sleep(0.05)  # slower than the work: the last batch is still being stored when the run ends
        self._note("store", batch)
        if batch == self.fail_store_on:
            raise OSError(f"store {batch}")
        assert result == batch * 10 + 1
        self.stored.append(batch)

    def cancelled(self) -> bool:
        return self.cancel_after is not None and len([e for e in self.events if e[0] == "work"]) >= self.cancel_after

    def run(self, batches: list[int]) -> bool:
        io = RunIO()
        try:
            return run_overlapped(io, iter(batches), self.read, self.work, self.store, self.cancelled)
        finally:
            io.close()


def test_every_batch_is_read_on_the_helper_worked_here_and_stored_behind_in_order() -> None:
    recorder = Recorder()
    assert recorder.run([1, 2, 3, 4]) is True
    assert recorder.stored == [1, 2, 3, 4]
    assert {thread for step, _, thread in recorder.events if step in ("read", "store")} == {"job-io"}
    assert {thread for step, _, thread in recorder.events if step == "work"} == {"MainThread"}
    reads = [batch for step, batch, _ in recorder.events if step == "read"]
    assert reads == [1, 2, 3, 4]  # each once, in order
    assert recorder.events.index(("read", 2, "job-io")) < recorder.events.index(("work", 2, "MainThread"))
    assert Recorder().run([]) is True


def test_a_cancel_stops_before_the_next_batch_and_waits_for_the_one_being_stored() -> None:
    recorder = Recorder(cancel_after=2)
    assert recorder.run([1, 2, 3, 4]) is False
    assert recorder.stored == [1, 2]  # what was worked was stored; batch 3, read ahead, was not worked


def test_an_error_here_lets_the_batch_being_stored_finish_and_is_raised() -> None:
    recorder = Recorder(fail_work_on=3)
    with pytest.raises(MemoryError, match="batch 3"):
        recorder.run([1, 2, 3, 4])
    assert recorder.stored == [1, 2]  # a resumed shard starts at batch 3


def test_an_error_of_the_helper_s_store_is_raised_here_and_nothing_after_it_is_stored() -> None:
    recorder = Recorder(fail_store_on=2)
    with pytest.raises(OSError, match="store 2"):
        recorder.run([1, 2, 3, 4])
    assert recorder.stored == [1]


def _at_once(calls: list) -> list:
    io = RunIO()
    try:
        return at_once(io, calls)
    finally:
        io.close()


def test_at_once_runs_the_first_call_on_the_helper_beside_the_others_and_gives_every_result_in_order() -> None:
    both = threading.Barrier(2, timeout=5)  # each call waits for the other: they must run at the same time

    def call(value: int):
        return lambda: (both.wait(), value, threading.current_thread().name.split("_")[0])[1:]

    assert _at_once([call(1), call(2)]) == [(1, "job-io"), (2, "MainThread")]
    assert _at_once([]) == [] and _at_once([lambda: 3]) == [3]


def test_at_once_raises_an_error_here_after_the_helper_s_call_has_ended_and_the_helper_s_error_after_the_calls_here() -> None:
    ended: list[str] = []

    def slow() -> None:
        time.sleep(0.1)
        ended.append("helper")

    def failing_here() -> None:
        raise ValueError("corpus 'b': 3 sentences have no vector")

    with pytest.raises(ValueError, match="corpus 'b'"):
        _at_once([slow, failing_here])
    assert ended == ["helper"]  # not left running on the helper's connection

    def failing_there() -> None:
        raise ValueError("corpus 'a'")

    with pytest.raises(ValueError, match="corpus 'a'"):
        _at_once([failing_there, lambda: ended.append("here")])
    assert ended == ["helper", "here"]
