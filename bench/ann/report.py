"""Printed tables of bench/ann_vs_faiss.py."""

from __future__ import annotations

from ann.pgload import gb
from ann.results import MethodResult

TARGETS = (0.90, 0.95)


def rate_text(result: MethodResult, target: float) -> str:
    rate, how = result.queries_per_second_at(target)
    return f"not reached ({result.best_recall:.3f})" if rate is None else f"{how}{rate:,.0f}"


def print_sweeps(results: list[MethodResult]) -> None:
    print("\nSweeps (one query at a time: one connection / one thread; recall@10 against exact search)")
    for result in results:
        print(f"{result.engine} {result.name} ({result.notes}); {result.parameter_name}:")
        for point in sorted(result.points, key=lambda p: p.parameter):
            print(
                f"  {point.parameter:>6} | recall@10 {point.recall:.3f} | {point.queries_per_second:9,.0f} queries/s | p50 {point.p50_ms:7.2f} ms"
            )


def print_summary(results: list[MethodResult]) -> None:
    print("\nSummary: queries/s at equal recall@10 (one query at a time; '~' interpolated, '>=' first sweep point already above)")
    header = (
        f"{'engine':<9} {'index':<24} | {'build s':>8} {'size':>9} {'B/vec':>6} | {'qps @0.90':>14} {'qps @0.95':>14} | {'best recall':>11}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.engine:<9} {r.name:<24} | {r.build_seconds:8,.1f} {gb(r.index_bytes):>9} {r.index_bytes / r.vectors:6,.0f} | "
            f"{rate_text(r, 0.90):>14} {rate_text(r, 0.95):>14} | {r.best_recall:11.3f}"
        )


def best(results: list[MethodResult], engine: str, target: float) -> tuple[MethodResult | None, float]:
    rated = [(r, r.queries_per_second_at(target)[0]) for r in results if r.engine == engine]
    rated = [(r, rate) for r, rate in rated if rate is not None]
    return max(rated, key=lambda item: item[1]) if rated else (None, 0.0)


def print_ratios(results: list[MethodResult]) -> None:
    print("\nRatio pgvector / faiss, queries/s at equal recall@10 (same run, same vectors and queries; < 1: faiss faster)")
    by_name = {(r.engine, r.name): r for r in results}
    for target in TARGETS:
        pg, pg_rate = best(results, "pgvector", target)
        fa, fa_rate = best(results, "faiss", target)
        if pg and fa:
            print(
                f"  recall {target:.2f}: best pgvector {pg.name} {pg_rate:,.0f} / best faiss {fa.name} {fa_rate:,.0f} = {pg_rate / fa_rate:.2f}"
            )
        for r in results:
            if r.engine != "pgvector" or not r.name.startswith("HNSW vector"):
                continue
            peer = by_name.get(("faiss", f"HNSW M{r.name.rsplit('m', 1)[1]}"))
            own, other = r.queries_per_second_at(target)[0], peer.queries_per_second_at(target)[0] if peer else None
            if peer and own and other:
                print(f"  recall {target:.2f}: pgvector {r.name} {own:,.0f} / faiss {peer.name} {other:,.0f} = {own / other:.2f}")


def print_parallel(results: list[MethodResult]) -> None:
    print("\nThroughput with parallelism, at the first sweep point reaching recall 0.95 (else the best):")
    print("  pgvector: queries shared over N connections, one client thread each; faiss: one batched search over N OpenMP threads")
    for r in results:
        rates = ", ".join(f"{n}: {rate:,.0f}" for n, rate in sorted(r.parallel.items()))
        recall = next(p.recall for p in r.points if p.parameter == r.parallel_parameter)
        print(
            f"  {r.engine:<9} {r.name:<24} {r.parameter_name.split(' ')[0]} {r.parallel_parameter:>5} (recall {recall:.3f}) | queries/s by N: {rates}"
        )


def print_filtered(pg_rows: list[tuple], faiss_rows: list[tuple], modulus: int, pg_name: str, faiss_name: str) -> None:
    if not pg_rows and not faiss_rows:
        return
    print(
        f"\nFiltered queries (only rows with doc_id % {modulus} = 0, ~{100 / modulus:.0f}% of the table; recall against the filtered exact top-10)"
    )
    for mode, ef_search, recall, returned, rate in pg_rows:
        print(
            f"  pgvector {pg_name}, iterative_scan {mode:<13} ef_search {ef_search:>4} | recall {recall:.3f} | rows {returned:5.2f} | {rate:8,.0f} queries/s"
        )
    for ef_search, recall, returned, rate in faiss_rows:
        print(
            f"  faiss {faiss_name}, IDSelector (filter inside the search) efSearch {ef_search:>4} | recall {recall:.3f} | rows {returned:5.2f} | {rate:8,.0f} queries/s"
        )
