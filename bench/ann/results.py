"""Results of one ANN method: its build, its parameter sweep, and queries/s at a target recall."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def ef_construction_for(m: int) -> int:
    """The build's candidate list on both sides: pgvector's default 64, at least 2 m as pgvector requires."""
    return max(64, 2 * m)


@dataclass(frozen=True)
class SweepPoint:
    parameter: int  # ef_search, efSearch, nprobe or re-rank candidates
    recall: float  # recall@10 against exact search
    queries_per_second: float  # one query at a time, one connection / one thread
    p50_ms: float

    @staticmethod
    def from_latencies(parameter: int, recall: float, latencies: np.ndarray) -> SweepPoint:
        return SweepPoint(parameter, recall, len(latencies) / float(latencies.sum()), float(np.median(latencies)) * 1000)


@dataclass
class MethodResult:
    engine: str  # "pgvector" or "faiss"
    name: str  # e.g. "HNSW vector m16"
    parameter_name: str
    build_seconds: float
    index_bytes: int
    vectors: int
    points: list[SweepPoint] = field(default_factory=list)
    parallel: dict[int, float] = field(default_factory=dict)  # connections or threads -> queries/s
    parallel_parameter: int | None = None
    notes: str = ""

    def queries_per_second_at(self, target: float) -> tuple[float | None, str]:
        """Queries/s where the sweep first reaches ``target`` recall, and how it was read.

        Between the last point below and the first point at or above the target, log(queries/s) is
        interpolated linearly in recall; a first point already above the target gives its own
        queries/s (marked ">=": a cheaper setting might reach it faster). None if never reached.
        """
        ordered = sorted(self.points, key=lambda p: p.parameter)
        for index, point in enumerate(ordered):
            if point.recall >= target:
                if index == 0:
                    return point.queries_per_second, ">="
                below = ordered[index - 1]
                if point.recall <= below.recall:
                    return point.queries_per_second, ""
                share = (target - below.recall) / (point.recall - below.recall)
                log_qps = math.log(below.queries_per_second) + share * (
                    math.log(point.queries_per_second) - math.log(below.queries_per_second)
                )
                return math.exp(log_qps), "~"
        return None, ""

    def first_parameter_reaching(self, target: float) -> int:
        """The cheapest swept parameter with recall >= target, else the one with the best recall."""
        ordered = sorted(self.points, key=lambda p: p.parameter)
        for point in ordered:
            if point.recall >= target:
                return point.parameter
        return max(ordered, key=lambda p: p.recall).parameter

    @property
    def best_recall(self) -> float:
        return max(p.recall for p in self.points)
