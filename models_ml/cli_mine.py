"""``python -m models_ml mine``: pseudo-parallel pairs from unpaired documents, without a database (LHA or MUSS)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from models_ml.cli_support import InputError, check_writable_directory, read_sentences


def add_mine(commands: argparse._SubParsersAction) -> None:
    mine = commands.add_parser(
        "mine",
        help="mine pseudo-parallel sentence pairs from unpaired documents (LHA or MUSS)",
        description=(
            "Each folder holds one document per *.txt file (one sentence a line; the file name is the document id). "
            "LHA aligns --source documents with --target documents (documents first, then sentences); MUSS mines "
            "paraphrases among the --source documents (and --target's, when given)."
        ),
    )
    mine.add_argument("--source", required=True, type=Path, help="folder of source documents")
    mine.add_argument("--target", type=Path, help="folder of target documents (required for lha)")
    mine.add_argument("--method", required=True, choices=("lha", "muss"))
    mine.add_argument("--output", required=True, type=Path, help="where to write the mined items (JSONL)")
    mine.add_argument("--k", type=int, default=None, help="neighbours per sentence (lha, default 5) or per sequence (muss, default 8)")
    mine.add_argument("--k-documents", type=int, default=None, help="lha: nearest target documents per source document (default 5)")
    mine.add_argument("--theta-d", type=float, default=None, help="lha: document cosine threshold (default 0.5)")
    mine.add_argument("--theta-s", type=float, default=None, help="lha: sentence cosine threshold (default LHAConfig.theta_s)")
    mine.add_argument("--global", dest="global_variant", action="store_true", help="lha: skip the document step (for comparison)")
    mine.add_argument("--no-filters", action="store_true", help="lha: keep pairs that fail the overlap or length filter")
    mine.add_argument("--language", default="en", help="stop words and word frequencies (en, de)")
    mine.add_argument("--device", default=None, help="encoder device, e.g. cpu or cuda:0")


def _read_folder(folder: Path) -> list:
    from models_ml.mining.types import MiningDocument

    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise InputError(f"{folder}: no *.txt documents")
    return [MiningDocument(path.stem, read_sentences(path)[0]) for path in files]


def run_mine(args: argparse.Namespace) -> str:
    if args.method == "lha" and args.target is None:
        raise InputError("mine: --method lha needs --target")
    source = _read_folder(args.source)
    target = _read_folder(args.target) if args.target is not None else []
    check_writable_directory(args.output.parent if str(args.output.parent) else Path("."))
    from models_ml.mining.lha import LHAConfig, mine_lha
    from models_ml.mining.muss import MussConfig, mine_muss
    from models_ml.similarity.encoders import load_sentence_encoder

    options = {
        "k_sentences": args.k, "k_documents": args.k_documents, "theta_d": args.theta_d, "theta_s": args.theta_s,
        "language": args.language,
    }  # fmt: skip
    try:
        if args.method == "lha":
            config = LHAConfig(**{key: value for key, value in options.items() if value is not None},
                               global_variant=args.global_variant,
                               **({"min_overlap": None, "max_length_ratio": None} if args.no_filters else {}))  # fmt: skip
        else:
            config = MussConfig(**({"k": args.k} if args.k is not None else {}), language=args.language)
    except (TypeError, ValueError) as error:
        raise InputError(f"mine: {error}") from None
    encoder = load_sentence_encoder(device=args.device or "")
    encode = lambda texts: encoder.encode(list(texts))  # noqa: E731 - a one-line adapter passed on as a callable
    items = (
        mine_lha(source, target, encode=encode, config=config)
        if args.method == "lha"
        else mine_muss(source + target, encode=encode, config=config)
    )
    count = 0
    try:
        with args.output.open("w", encoding="utf-8") as handle:
            for item in items:
                handle.write(json.dumps(item.as_dict(), ensure_ascii=False) + "\n")
                count += 1
    except OSError as error:
        raise InputError(f"{args.output}: cannot write ({error.strerror})") from None
    return f"{count} mined items from {len(source)} source and {len(target)} target documents written to {args.output}"
