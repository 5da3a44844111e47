"""Command line without a database: ``python -m models_ml align | evaluate | train | mine | neighbours``.

align     aligns one document pair given as two sentence files (one sentence a line, a blank
          line between paragraphs) and writes one JSON group a line.
evaluate  compares predicted groups with gold groups (Task 1 / Task 2, sentence-pair and
          group level).
train     trains the aligner's CRF on gold alignments (Wiki-Manual TSV or DEplain CSV) and
          saves it as a model directory that ``align --model`` reads.
mine      mines pseudo-parallel pairs from unpaired documents (LHA between two folders, or MUSS
          paraphrase mining within one) and writes one JSON item a line.
neighbours  each query sentence's k nearest sentences of a collection (dense, lexical or hybrid
          retrieval), one JSON line per query.

Bad input ends with exit status 2 and one line on stderr that names the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from models_ml.cli_mine import add_mine, run_mine
from models_ml.cli_neighbours import add_neighbours, run_neighbours
from models_ml.cli_support import EXIT_BAD_INPUT, InputError, check_writable_directory, read_sentences
from models_ml.data.deplain import read_deplain, unplaced_summary
from models_ml.data.io import AlignmentGroup, GoldPair, read_groups_jsonl, read_known_links, write_groups_jsonl
from models_ml.data.wiki_manual import read_wiki_manual_tsv

__all__ = ["EXIT_BAD_INPUT", "InputError", "main", "read_gold"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m models_ml", description="Sentence alignment of complex and simplified documents, without a database."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add_command in (_add_align, _add_evaluate, _add_train, add_mine, add_neighbours):
        add_command(commands)
    return parser


def _add_align(commands: argparse._SubParsersAction) -> None:
    align = commands.add_parser("align", help="align one document pair and write JSON-lines groups")
    align.add_argument("--complex", required=True, type=Path, help="complex document: one sentence a line")
    align.add_argument("--simple", required=True, type=Path, help="simple document: one sentence a line")
    align.add_argument("--output", required=True, type=Path, help="where to write the groups (JSONL)")
    source = align.add_mutually_exclusive_group()
    source.add_argument(
        "--model", type=Path, help="a directory written by Aligner.save (default: the model shipped in models_ml/default_model)"
    )
    source.add_argument("--config", type=Path, help="AlignerConfig as JSON for an untrained aligner")
    source.add_argument("--untrained", action="store_true", help="the untrained, hand-calibrated MiniLM aligner")
    align.add_argument("--device", default=None, help="override the device, e.g. cpu or cuda:0")
    align.add_argument(
        "--fixed", type=Path, help="known groups (JSONL, the output's format; complex [] = unaligned): kept, the rest aligned given them"
    )
    align.add_argument("--refit", action="store_true", help="with --fixed: also fit a per-pair correction to the known groups")


def _add_evaluate(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "evaluate",
        help="score predicted groups against gold groups",
        description=(
            "Task 1 / Task 2 precision, recall and F1 at sentence-pair and group level. With JSONL gold, "
            "the document sizes are taken as 1 + the largest index in either file (sizes only bound-check "
            "indices, so the figures do not depend on them). With --gold-format deplain, --pred-dir holds "
            "one <pair_id>.jsonl per document pair; a missing file counts as an empty prediction."
        ),
    )
    evaluate.add_argument("--gold", type=Path, help="gold groups (JSONL, same format as align's output)")
    evaluate.add_argument("--pred", type=Path, help="predicted groups (JSONL)")
    evaluate.add_argument("--gold-format", choices=("jsonl", "deplain"), default="jsonl")
    evaluate.add_argument("--gold-documents", type=Path, help="DEplain documents.csv")
    evaluate.add_argument("--gold-alignments", type=Path, help="DEplain alignments.csv")
    evaluate.add_argument("--pred-dir", type=Path, help="directory of <pair_id>.jsonl predictions")
    evaluate.add_argument("--exclude-identical", action="store_true", help="leave out gold pairs marked identical")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")


def _add_train(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser(
        "train",
        help="train the aligner's CRF on gold alignments and save the model directory",
        description=(
            "With --format deplain, --gold is the directory holding documents.csv and alignments.csv, "
            "or the alignments.csv file with documents.csv beside it."
        ),
    )
    train.add_argument("--gold", required=True, type=Path, help="gold alignments (TSV file, or DEplain folder/csv)")
    train.add_argument("--format", required=True, choices=("wiki-manual", "deplain"), dest="gold_format")
    train.add_argument("--output", required=True, type=Path, help="model directory to write (Aligner.save)")
    start = train.add_mutually_exclusive_group()
    start.add_argument("--config", type=Path, help="AlignerConfig as JSON (default: the learned pair scorer + CRF)")
    start.add_argument(
        "--base", type=Path, help="a model directory to fine-tune (its config and weights; a learned scorer is kept near its start)"
    )
    train.add_argument("--epochs", type=int, default=None, help="passes over the training blocks (default: TrainingConfig.epochs, 10)")
    train.add_argument("--lr", type=float, default=None, help="Adam learning rate (default: TrainingConfig.lr, 0.05)")
    train.add_argument("--seed", type=int, default=0, help="seeds the CRF's initial parameters, the dev split and the block order")
    train.add_argument(
        "--dev-fraction", type=float, default=0.15,
        help="share of document pairs held out for early stopping (default 0.15; 0 trains on all for --epochs)",
    )  # fmt: skip
    train.add_argument("--patience", type=int, default=None, help="epochs without a better dev group F1 before stopping (default 3)")
    train.add_argument("--device", default=None, help="override the device, e.g. cpu or cuda:0")
    train.add_argument("--pair-classifier-output", type=Path, help="also fine-tune the cross-encoder pair classifier and save it here")
    train.add_argument("--pair-classifier-epochs", type=int, default=1, help="epochs for the pair classifier (default 1)")


def _load_config(path: Path, device: str | None) -> object:
    from models_ml.aligning.aligner_config import AlignerConfig

    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid JSON ({error})") from None
    if device is not None and isinstance(data, dict):
        data = {**data, "device": device}
    try:
        return AlignerConfig.from_dict(data)
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None


def run_align(args: argparse.Namespace) -> None:
    complex_sentences, complex_paragraphs = read_sentences(args.complex)
    simple_sentences, simple_paragraphs = read_sentences(args.simple)
    fixed = _read_known(args.fixed, len(simple_sentences), len(complex_sentences)) if args.fixed is not None else None
    if args.refit and fixed is None:
        raise InputError("--refit needs --fixed (the known groups it fits to)")
    config = _load_config(args.config, args.device) if args.config is not None else None
    from models_ml.aligning.aligner import Aligner  # imports torch: only once the inputs and the config are read
    from models_ml.aligning.aligner_config import AlignerConfig
    from models_ml.data.checkpoint import DEFAULT_MODEL_DIR

    if config is not None:
        aligner = Aligner(config)  # type: ignore[arg-type]
    elif args.untrained:
        aligner = Aligner(AlignerConfig(device=args.device or ""))
    else:
        model = args.model if args.model is not None else DEFAULT_MODEL_DIR
        if not model.is_dir():
            raise InputError(f"{model}: no such model directory")
        try:
            aligner = Aligner.load(model, device=args.device)
        except ValueError as error:
            raise InputError(str(error)) from None
    from models_ml.aligning.blockwise import MIN_CELLS, align_in_blocks

    if fixed is None and len(complex_sentences) * len(simple_sentences) > MIN_CELLS:  # a huge pair: block by block, bounded
        groups = align_in_blocks(aligner, complex_sentences, simple_sentences, complex_paragraphs, simple_paragraphs)
    else:
        groups = aligner.align(
            complex_sentences, simple_sentences, complex_paragraphs, simple_paragraphs, fixed=fixed, refit=args.refit
        ).groups
    try:
        write_groups_jsonl(args.output, groups)
    except OSError as error:
        raise InputError(f"{args.output}: cannot write ({error.strerror})") from None


def _read_known(path: Path, m: int, n: int) -> dict[int, tuple[int, ...]]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        return read_known_links(path, m, n)
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: {error}" if str(path) not in str(error) else str(error)) from None


def _read_groups(path: Path) -> list[AlignmentGroup]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        return read_groups_jsonl(path)
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: {error}" if str(path) not in str(error) else str(error)) from None


def _document_size(*group_lists: Sequence[AlignmentGroup]) -> tuple[int, int]:
    """(m simple, n complex) as 1 + the largest index seen: JSONL carries no document sizes."""
    simple = [j for groups in group_lists for g in groups for j in g.simple]
    complex_ = [i for groups in group_lists for g in groups for i in g.complex]
    return (max(simple, default=-1) + 1, max(complex_, default=-1) + 1)


def run_evaluate(args: argparse.Namespace) -> str:
    from models_ml.data.evaluate import (
        evaluate_corpus,
        format_report,
        format_sweep,
        group_score_sweep,
    )

    if args.gold_format == "jsonl":
        if args.gold is None or args.pred is None:
            raise InputError("evaluate: --gold and --pred are required with --gold-format jsonl")
        gold, pred = _read_groups(args.gold), _read_groups(args.pred)
        m, n = _document_size(gold, pred)
        documents = [(gold, pred, m, n)]
    else:
        if args.gold_documents is None or args.gold_alignments is None or args.pred_dir is None:
            raise InputError("evaluate: --gold-documents, --gold-alignments and --pred-dir are required with deplain")
        for path in (args.gold_documents, args.gold_alignments):
            if not path.is_file():
                raise InputError(f"{path}: no such file")
        if not args.pred_dir.is_dir():
            raise InputError(f"{args.pred_dir}: no such directory")
        try:
            pairs = read_deplain(args.gold_documents, args.gold_alignments)
        except ValueError as error:
            raise InputError(str(error)) from None
        if (unplaced := unplaced_summary(pairs)) is not None:
            _warn(unplaced)
        if not pairs:
            raise InputError(f"{args.gold_documents}: no document pairs")
        documents = []
        for pair in pairs:
            pred_path = args.pred_dir / f"{pair.pair_id}.jsonl"
            pred = _read_groups(pred_path) if pred_path.is_file() else []
            documents.append((pair.groups, pred, len(pair.simple_sentences), len(pair.complex_sentences)))
    try:
        report = evaluate_corpus(documents, exclude_identical=args.exclude_identical)
        sweep = group_score_sweep(documents, exclude_identical=args.exclude_identical)
    except ValueError as error:
        raise InputError(f"{args.pred_dir or args.pred}: {error}") from None
    if args.json:
        data = report.as_dict()
        if sweep is not None:
            data["sweep"] = {name: {"threshold": t, **prf.as_dict()} for name, (t, prf) in sweep.items()}
        return json.dumps(data, indent=2)
    return format_report(report) + ("\n\n" + format_sweep(sweep) if sweep is not None else "")


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr)


def read_gold(path: Path, gold_format: str, warn: Callable[[str], None] = _warn) -> list[GoldPair]:
    """Gold pairs of a Wiki-Manual TSV, or of DEplain's documents.csv + alignments.csv (folder or csv).

    DEplain rows that cannot be placed on the documents' sentences are left out and reported
    through ``warn`` (count first, then each row with its line), not fatal.
    """
    alignments = path / "alignments.csv" if gold_format == "deplain" and path.is_dir() else path
    files = [alignments] if gold_format == "wiki-manual" else [alignments.parent / "documents.csv", alignments]
    for required in files:
        if not required.is_file():
            raise InputError(f"{required}: no such file")
    try:
        pairs = read_wiki_manual_tsv(alignments) if gold_format == "wiki-manual" else read_deplain(*files)
    except (ValueError, UnicodeDecodeError) as error:
        named = any(str(file) in str(error) for file in files)
        raise InputError(str(error) if named else f"{alignments}: {error}") from None
    if (unplaced := unplaced_summary(pairs)) is not None:
        warn(unplaced)
    if not any(pair.groups for pair in pairs):
        raise InputError(f"{alignments}: no gold alignment groups to train on")
    return pairs


def _dev_split(pairs: list[GoldPair], fraction: float, seed: int, source: Path) -> tuple[list[GoldPair], list[GoldPair]]:
    """Document pairs for training and for early stopping (never one pair in both)."""
    from models_ml.data.splits import assign_splits

    if not 0.0 <= fraction < 1.0:
        raise InputError(f"train: --dev-fraction must be in [0, 1), got {fraction}")
    labelled = [pair for pair in pairs if pair.groups]
    if fraction == 0.0:
        return pairs, []
    if len(labelled) < 2:
        raise InputError(
            f"{source}: early stopping needs at least 2 labelled document pairs (one to train on, one for dev); "
            f"got {len(labelled)}. Give more gold or pass --dev-fraction 0"
        )
    split = assign_splits([pair.pair_id for pair in labelled], seed=seed, fractions={"train": 1.0 - fraction, "dev": fraction})
    dev_ids = {key for key, name in split.items() if name == "dev"}
    return [pair for pair in pairs if pair.pair_id not in dev_ids], [pair for pair in labelled if pair.pair_id in dev_ids]


def run_train(args: argparse.Namespace) -> str:
    pairs = read_gold(args.gold, args.gold_format)
    check_writable_directory(args.output)
    pair_training = None
    if args.pair_classifier_output is not None:
        check_writable_directory(args.pair_classifier_output)
        from models_ml.similarity.cross_encoder_training import PairTrainingConfig

        try:
            pair_training = PairTrainingConfig(epochs=args.pair_classifier_epochs)
        except ValueError as error:
            raise InputError(f"pair classifier: {error}") from None
    from models_ml.aligning.aligner import Aligner  # imports torch: only once the gold is read
    from models_ml.aligning.aligner_config import learned_config
    from models_ml.aligning.train import TrainingConfig, train_aligner

    defaults = TrainingConfig()
    try:
        training = TrainingConfig(
            epochs=defaults.epochs if args.epochs is None else args.epochs,
            lr=defaults.lr if args.lr is None else args.lr,
            patience=defaults.patience if args.patience is None else args.patience,
        )
    except ValueError as error:
        raise InputError(f"train: {error}") from None
    train_pairs, dev_pairs = _dev_split(pairs, args.dev_fraction, args.seed, args.gold)
    if args.base is not None:
        if not args.base.is_dir():
            raise InputError(f"{args.base}: no such model directory")
        try:
            aligner = Aligner.load(args.base, device=args.device)
        except ValueError as error:
            raise InputError(str(error)) from None
    else:
        config = _load_config(args.config, args.device) if args.config is not None else learned_config(device=args.device or "")
        aligner = Aligner(config, seed=args.seed)  # type: ignore[arg-type]
    say = lambda line: print(line, file=sys.stderr)  # noqa: E731 - a one-line progress callback
    try:
        report = train_aligner(
            train_pairs, aligner=aligner, training=training, seed=args.seed, progress=say, dev_pairs=dev_pairs,
            on_epoch=lambda e: say(f"epoch {e.epoch}/{e.epochs}: "
                                   + ("before training" if e.log_likelihood is None else f"log-likelihood {e.log_likelihood:.3f}")
                                   + (f", dev group F1 {e.dev.group_task1.f1:.3f}" if e.dev else "")),
        )  # fmt: skip
    except ValueError as error:
        raise InputError(f"{args.gold}: {error}") from None
    try:
        aligner.save(args.output)
    except OSError as error:
        raise InputError(f"{args.output}: cannot write the model ({error.strerror})") from None
    summary = f"{report.summary()}\nsaved to {args.output}"
    if args.pair_classifier_output is not None:
        summary += "\n" + _train_pair_classifier(args, pairs, pair_training)
    return summary


def _train_pair_classifier(args: argparse.Namespace, pairs: list, training: object) -> str:
    from models_ml.similarity.cross_encoder import save_pair_classifier
    from models_ml.similarity.cross_encoder_training import fine_tune_pair_classifier
    from models_ml.similarity.encoders import default_device

    try:
        model, losses, count = fine_tune_pair_classifier(pairs, training=training, seed=args.seed, device=args.device or default_device())
    except ValueError as error:
        raise InputError(f"pair classifier: {error}") from None
    try:
        save_pair_classifier(model, args.pair_classifier_output)  # type: ignore[arg-type]
    except OSError as error:
        raise InputError(f"{args.pair_classifier_output}: cannot write the pair classifier ({error.strerror})") from None
    return f"pair classifier: {count} examples, loss per epoch {[round(x, 4) for x in losses]}; saved to {args.pair_classifier_output}"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "align":
            run_align(args)
        elif args.command == "train":
            print(run_train(args))
        elif args.command == "mine":
            print(run_mine(args))
        elif args.command == "neighbours":
            print(run_neighbours(args))
        else:
            print(run_evaluate(args))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
