"""Shared pieces of the nearest-neighbour benches (bench/hnsw_scale.py, bench/ann_vs_faiss.py).

bench/ is not a package: the scripts put bench/ on sys.path, so these import as ``ann.<module>``.
"""
