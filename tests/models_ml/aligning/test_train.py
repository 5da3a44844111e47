"""Training the aligner's CRF (models_ml.aligning.train) and the ``train`` CLI, on tiny hand-made gold with a lexical measure."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from models_ml.__main__ import main
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.crf import CRFConfig
from models_ml.aligning.train import TrainingConfig, train_aligner
from models_ml.data.evaluate import evaluate_corpus
from models_ml.data.io import AlignmentGroup, GoldPair, read_groups_jsonl

JACCARD = AlignerConfig(measure="jaccard", device="cpu", paragraph_variant="none")


def weak_overlap_pair(index: int) -> GoldPair:
    """Three complex and three simple sentences; simple j paraphrases complex j with Jaccard 3/11 ~ 0.27.

    That is below the untrained null threshold (0.45), so the untrained aligner links nothing;
    unrelated sentences share no word at all.
    """
    complex_sentences = [" ".join(f"c{index}{s}w{k}" for k in range(8)) for s in range(3)]
    simple_sentences = [" ".join([*(f"c{index}{s}w{k}" for k in range(3)), *(f"s{index}{s}x{k}" for k in range(3))]) for s in range(3)]
    groups = [AlignmentGroup(complex=(s,), simple=(s,)) for s in range(3)]
    return GoldPair(f"doc{index}", complex_sentences, simple_sentences, groups, None, None)


def group_f1(aligner: Aligner, pairs: list[GoldPair]) -> float:
    documents = []
    for pair in pairs:
        predicted = aligner.align(pair.complex_sentences, pair.simple_sentences).groups
        documents.append((pair.groups, predicted, len(pair.simple_sentences), len(pair.complex_sentences)))
    return evaluate_corpus(documents).group_task1.f1


def test_training_raises_the_log_likelihood() -> None:
    pairs = [weak_overlap_pair(i) for i in range(4)]
    report = train_aligner(pairs, aligner=Aligner(JACCARD), training=TrainingConfig(epochs=5, lr=0.05), seed=0)
    assert report.final_log_likelihood > report.initial_log_likelihood + 1.0
    assert len(report.log_likelihoods) == 5
    assert report.log_likelihoods[-1] > report.log_likelihoods[0]
    assert (report.pairs, report.pairs_used, report.blocks, report.gold_pairs) == (4, 4, 4, 12)


def test_trained_aligner_decodes_gold_the_untrained_calibration_misses() -> None:
    pairs = [weak_overlap_pair(i) for i in range(4)]
    untrained = Aligner(JACCARD)
    assert group_f1(untrained, pairs) == 0.0  # every similarity is below the untrained null threshold
    trained = Aligner(JACCARD)
    train_aligner(pairs, aligner=trained, training=TrainingConfig(epochs=20, lr=0.1), seed=0)
    assert group_f1(trained, pairs) == 1.0
    assert group_f1(trained, [weak_overlap_pair(9)]) == 1.0  # an unseen document of the same kind


def test_training_is_deterministic_for_a_seed() -> None:
    pairs = [weak_overlap_pair(i) for i in range(3)]
    first, second = Aligner(JACCARD, seed=3), Aligner(JACCARD, seed=3)
    report_a = train_aligner(pairs, aligner=first, training=TrainingConfig(epochs=3), seed=5)
    report_b = train_aligner(pairs, aligner=second, training=TrainingConfig(epochs=3), seed=5)
    assert report_a.log_likelihoods == report_b.log_likelihoods
    assert all(bool((a == b).all()) for a, b in zip(first.crf.parameters(), second.crf.parameters()))


def test_saved_trained_aligner_loads_with_identical_predictions(tmp_path: Path) -> None:
    pairs = [weak_overlap_pair(i) for i in range(4)]
    aligner = Aligner(JACCARD)
    train_aligner(pairs, aligner=aligner, training=TrainingConfig(epochs=20, lr=0.1), seed=0)
    aligner.save(tmp_path / "model")
    loaded = Aligner.load(tmp_path / "model")
    assert loaded.config == aligner.config
    unseen = weak_overlap_pair(7)
    before = aligner.align(unseen.complex_sentences, unseen.simple_sentences)
    after = loaded.align(unseen.complex_sentences, unseen.simple_sentences)
    assert after.groups == before.groups and len(after.groups) == 3


def test_blocks_over_the_dense_state_limit_are_skipped_and_reported() -> None:
    small, large = weak_overlap_pair(0), weak_overlap_pair(1)
    large.complex_sentences = large.complex_sentences + [f"filler{k}" for k in range(20)]  # 23 complex: 67 states
    config = AlignerConfig(measure="jaccard", device="cpu", paragraph_variant="none", dense_state_limit=20)
    report = train_aligner([small, large], aligner=Aligner(config), training=TrainingConfig(epochs=1), seed=0)
    assert report.blocks == 1 and report.pairs_used == 1
    assert len(report.skipped_blocks) == 1
    assert "doc1" in report.skipped_blocks[0] and "dense_state_limit 20" in report.skipped_blocks[0]
    assert report.gold_pairs_outside_blocks == 3  # the skipped block's gold pairs are not learned


def test_no_trainable_block_raises_value_error() -> None:
    config = AlignerConfig(measure="jaccard", device="cpu", paragraph_variant="none", dense_state_limit=2)
    with pytest.raises(ValueError, match="no trainable block"):
        train_aligner([weak_overlap_pair(0)], aligner=Aligner(config), training=TrainingConfig(epochs=1), seed=0)


def test_gold_pairs_outside_aligned_paragraphs_are_counted() -> None:
    pair = weak_overlap_pair(0)
    pair.simple_sentences = list(pair.complex_sentences)  # identical paragraphs align with each other
    pair.complex_paragraphs, pair.simple_paragraphs = [0, 0, 1], [0, 0, 1]
    pair.groups = [*pair.groups, AlignmentGroup(complex=(2,), simple=(0,))]  # crosses paragraphs
    config = AlignerConfig(measure="jaccard", device="cpu", paragraph_variant="newsela")
    aligner = Aligner(config)
    report = train_aligner([pair], aligner=aligner, training=TrainingConfig(epochs=1), seed=0)
    plan = aligner.blocks(aligner.measure.score(pair.simple_sentences, pair.complex_sentences), [0, 0, 1], [0, 0, 1])
    assert not plan.mask[0, 2]
    assert report.gold_pairs == 4 and report.gold_pairs_outside_blocks == 1


def test_gold_pairs_wider_than_max_span_are_counted() -> None:
    pair = weak_overlap_pair(0)
    pair.groups = [AlignmentGroup(complex=(0, 2), simple=(0,))]  # complex 0 and 2 with 1 between: span 3
    config = AlignerConfig(measure="jaccard", device="cpu", paragraph_variant="none", crf=CRFConfig(max_span=2))
    report = train_aligner([pair], aligner=Aligner(config), training=TrainingConfig(epochs=1), seed=0)
    assert report.gold_pairs == 2 and report.gold_pairs_beyond_span == 1


def test_partial_threshold_is_tuned_on_training_pairs_only_when_asked() -> None:
    pairs = [weak_overlap_pair(i) for i in range(4)]
    kept = Aligner(JACCARD)
    report = train_aligner(pairs, aligner=kept, training=TrainingConfig(epochs=2, tune_partial_threshold=False), seed=0)
    assert report.partial_threshold == kept.config.partial_threshold == 0.5
    tuned = Aligner(JACCARD)
    report = train_aligner(pairs, aligner=tuned, training=TrainingConfig(epochs=20, lr=0.1), seed=0)
    assert group_f1(tuned, pairs) == 1.0
    # Gold is all "aligned" and the groups are right: no threshold beats labelling everything
    # aligned, and ties go to the lowest.
    assert report.partial_threshold == tuned.config.partial_threshold == 0.0


def test_precomputed_similarities_must_match_the_pairs() -> None:
    with pytest.raises(ValueError, match="2 similarity matrices for 1 gold pairs"):
        train_aligner(
            [weak_overlap_pair(0)], aligner=Aligner(JACCARD), training=TrainingConfig(epochs=1), seed=0,
            similarities=[None, None],  # type: ignore[list-item]
        )  # fmt: skip


@pytest.mark.parametrize(("field", "value"), [("epochs", 0), ("lr", 0.0)])
def test_training_config_rejects_bad_values(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        TrainingConfig(**{field: value})


# ----- the CLI ----------------------------------------------------------------------------


def write_wiki_tsv(path: Path, pairs: list[GoldPair]) -> Path:
    """Wiki-Manual rows (label, simple id, complex id, simple, complex) for every sentence combination."""
    lines = []
    for number, pair in enumerate(pairs):
        linked = {(s, c) for g in pair.groups for s in g.simple for c in g.complex}
        for s, simple in enumerate(pair.simple_sentences):
            for c, complex_ in enumerate(pair.complex_sentences):
                label = "aligned" if (s, c) in linked else "notAligned"
                lines.append(f"{label}\tDoc{number}-0-0-{s}\tDoc{number}-1-0-{c}\t{simple}\t{complex_}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def write_deplain(folder: Path, pairs: list[GoldPair]) -> Path:
    """documents.csv and alignments.csv in DEplain-web's layout; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "documents.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["original", "simplification", "pair_id", "license", "domain"])
        for number, pair in enumerate(pairs):
            writer.writerow(["|||".join(pair.complex_sentences), "|||".join(pair.simple_sentences), str(number), "x", pair.domain])
    with (folder / "alignments.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["original", "simplification", "original_id", "simplification_id", "pair_id", "rater", "alignment"])
        for number, pair in enumerate(pairs):
            for group in pair.groups:
                writer.writerow([
                    " ".join(pair.complex_sentences[c] for c in group.complex),
                    " ".join(pair.simple_sentences[s] for s in group.simple),
                    "|".join(f"{number}-1-0-{c}" for c in group.complex),
                    "|".join(f"{number}-0-0-{s}" for s in group.simple),
                    str(number), "1", "aligned",
                ])  # fmt: skip
    return folder


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"measure": "jaccard", "device": "cpu", "paragraph_variant": "none"}), encoding="utf-8")
    return path


def align_unseen_with(model: Path, tmp_path: Path) -> list[AlignmentGroup]:
    unseen = weak_overlap_pair(8)
    complex_path, simple_path = tmp_path / "complex.txt", tmp_path / "simple.txt"
    complex_path.write_text("\n".join(unseen.complex_sentences) + "\n", encoding="utf-8")
    simple_path.write_text("\n".join(unseen.simple_sentences) + "\n", encoding="utf-8")
    output = tmp_path / "groups.jsonl"
    status = main(["align", "--complex", str(complex_path), "--simple", str(simple_path), "--output", str(output), "--model", str(model)])
    assert status == 0
    return read_groups_jsonl(output)


@pytest.mark.parametrize("gold_form", ["wiki-manual", "deplain-folder", "deplain-csv"])
def test_cli_train_writes_a_model_that_align_uses(
    gold_form: str, tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = [weak_overlap_pair(i) for i in range(4)]
    if gold_form == "wiki-manual":
        gold, gold_format = write_wiki_tsv(tmp_path / "gold.tsv", pairs), "wiki-manual"
    else:
        folder = write_deplain(tmp_path / "deplain", pairs)
        gold, gold_format = (folder if gold_form == "deplain-folder" else folder / "alignments.csv"), "deplain"
    model = tmp_path / "model"
    args = ["train", "--gold", str(gold), "--format", gold_format, "--output", str(model), "--config", str(config_file)]
    status = main([*args, "--epochs", "20", "--lr", "0.1", "--seed", "1"])
    out = capsys.readouterr().out
    assert status == 0
    assert "pairs: 3 of 3 used" in out and f"saved to {model}" in out  # one of the four pairs is the dev pair
    assert "dev group F1 per epoch" in out
    assert sorted(p.name for p in model.iterdir()) == ["checksums.json", "config.json", "crf.pt"]
    groups = align_unseen_with(model, tmp_path)
    assert [(g.complex, g.simple) for g in groups] == [((0,), (0,)), ((1,), (1,)), ((2,), (2,))]


def test_cli_train_on_a_missing_gold_file_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing.tsv"
    status = main(["train", "--gold", str(missing), "--format", "wiki-manual", "--output", str(tmp_path / "m")])
    assert status == 2
    assert f"{missing}: no such file" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_cli_train_deplain_without_documents_csv_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_deplain(tmp_path / "deplain", [weak_overlap_pair(0)])
    (folder / "documents.csv").unlink()
    status = main(["train", "--gold", str(folder), "--format", "deplain", "--output", str(tmp_path / "m")])
    assert status == 2
    assert f"{folder / 'documents.csv'}: no such file" in capsys.readouterr().err


def test_cli_train_on_a_malformed_row_exits_2_naming_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write_wiki_tsv(tmp_path / "gold.tsv", [weak_overlap_pair(0)])
    gold.write_text(gold.read_text(encoding="utf-8") + "aligned\tonly three\tcolumns\n", encoding="utf-8")
    status = main(["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{gold}, line 10" in err and err.count("\n") == 1


def test_cli_train_without_gold_groups_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pair = weak_overlap_pair(0)
    pair.groups = []
    gold = write_wiki_tsv(tmp_path / "gold.tsv", [pair])  # notAligned rows only
    status = main(["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(tmp_path / "m")])
    assert status == 2
    assert f"{gold}: no gold alignment groups" in capsys.readouterr().err


def test_cli_train_to_an_unwritable_output_exits_2_before_training(
    tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = write_wiki_tsv(tmp_path / "gold.tsv", [weak_overlap_pair(0)])
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    args = ["train", "--gold", str(gold), "--format", "wiki-manual", "--config", str(config_file)]
    status = main([*args, "--output", str(blocker / "model")])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{blocker / 'model'}: cannot create the model directory" in err
    assert "training on" not in err  # failed before any training started


@pytest.mark.slow
def test_cli_train_also_fine_tunes_and_saves_the_pair_classifier(
    tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from models_ml.similarity.cross_encoder import load_pair_classifier

    gold = write_wiki_tsv(tmp_path / "gold.tsv", [weak_overlap_pair(0)])
    classifier = tmp_path / "classifier"
    argv = ["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(tmp_path / "model"), "--config", str(config_file)]
    status = main([*argv, "--pair-classifier-output", str(classifier), "--device", "cpu", "--dev-fraction", "0"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"saved to {classifier}" in out and "pair classifier:" in out
    probabilities = load_pair_classifier(classifier, device="cpu").predict_proba(["a b"], ["a b c"])
    assert probabilities.shape == (1, 3)


def test_cli_train_with_bad_pair_classifier_epochs_exits_2(tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write_wiki_tsv(tmp_path / "gold.tsv", [weak_overlap_pair(0)])
    argv = ["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(tmp_path / "model"), "--config", str(config_file)]
    status = main([*argv, "--pair-classifier-output", str(tmp_path / "c"), "--pair-classifier-epochs", "0"])
    assert status == 2
    assert "pair classifier: epochs and batch_size must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "model").exists()  # checked before anything is trained or written


def test_early_stopping_keeps_the_best_dev_epoch_and_reports_every_epoch() -> None:
    pairs = [weak_overlap_pair(i) for i in range(4)]
    aligner = Aligner(JACCARD, seed=0)
    seen = []
    report = train_aligner(
        pairs[:3], aligner=aligner, training=TrainingConfig(epochs=30, lr=0.1, patience=2), seed=0,
        dev_pairs=pairs[3:], on_epoch=seen.append,
    )  # fmt: skip
    assert report.dev_f1[0] == 0.0  # epoch 0: the untrained calibration links nothing
    assert report.best_epoch is not None and report.dev_f1[report.best_epoch] == max(report.dev_f1) == 1.0
    assert report.stopped_early and len(report.log_likelihoods) == report.best_epoch + 2 < 30
    assert [e.epoch for e in seen] == list(range(len(report.log_likelihoods) + 1))  # epoch 0: the starting weights
    assert seen[0].log_likelihood is None and all(e.log_likelihood is not None for e in seen[1:])
    assert all(e.dev is not None for e in seen) and seen[-1].best_epoch == report.best_epoch
    assert group_f1(aligner, pairs[3:]) == 1.0  # the restored weights are the best epoch's


def test_early_stopping_restores_the_given_weights_when_training_never_helps_dev() -> None:
    pairs = [weak_overlap_pair(i) for i in range(3)]
    base = Aligner(JACCARD, seed=0)
    train_aligner(pairs, aligner=base, training=TrainingConfig(epochs=20, lr=0.1), seed=0)
    before = {k: v.clone() for k, v in base.crf.state_dict().items()}
    # Wrong training gold (every simple sentence linked to a complex sentence it does not paraphrase),
    # correct dev gold: the weights given (epoch 0) stay the best on dev.
    wrong = [
        GoldPair(
            p.pair_id,
            p.complex_sentences,
            p.simple_sentences,
            [AlignmentGroup(complex=((s + 2) % 3,), simple=(s,)) for s in range(3)],
            None,
            None,
        )
        for p in pairs
    ]
    report = train_aligner(
        wrong, aligner=base, training=TrainingConfig(epochs=5, lr=0.5, patience=2, tune_partial_threshold=False),
        seed=1, dev_pairs=[weak_overlap_pair(5)],
    )  # fmt: skip
    assert report.best_epoch == 0 and report.dev_f1[0] == 1.0
    assert all((base.crf.state_dict()[k] == v).all() for k, v in before.items())


def test_a_cancelling_on_epoch_hook_stops_training() -> None:
    class Cancelled(Exception):
        pass

    def cancel(epoch_report) -> None:
        if epoch_report.epoch == 2:
            raise Cancelled

    with pytest.raises(Cancelled):
        train_aligner([weak_overlap_pair(0)], aligner=Aligner(JACCARD, seed=0), training=TrainingConfig(epochs=9), seed=0, on_epoch=cancel)


def test_cli_train_from_a_base_model_keeps_its_config(tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = write_wiki_tsv(tmp_path / "gold.tsv", [weak_overlap_pair(i) for i in range(4)])
    base, tuned = tmp_path / "base", tmp_path / "tuned"
    common = ["train", "--gold", str(gold), "--format", "wiki-manual", "--dev-fraction", "0"]
    assert main([*common, "--output", str(base), "--config", str(config_file), "--epochs", "2"]) == 0
    assert main([*common, "--output", str(tuned), "--base", str(base), "--epochs", "20", "--lr", "0.1"]) == 0
    assert "pairs: 4 of 4 used" in capsys.readouterr().out  # --dev-fraction 0: every pair trains
    assert json.loads((tuned / "config.json").read_text())["measure"] == "jaccard"
    assert [(g.complex, g.simple) for g in align_unseen_with(tuned, tmp_path)] == [((0,), (0,)), ((1,), (1,)), ((2,), (2,))]


def test_cli_train_from_a_corrupted_base_exits_2_naming_the_file(
    tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = write_wiki_tsv(tmp_path / "gold.tsv", [weak_overlap_pair(i) for i in range(3)])
    base = tmp_path / "base"
    assert (
        main(
            ["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(base), "--config", str(config_file), "--epochs", "1"]
        )
        == 0
    )
    with (base / "crf.pt").open("ab") as handle:
        handle.write(b"tampered")
    capsys.readouterr()
    status = main(["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(tmp_path / "out"), "--base", str(base)])
    assert status == 2
    err = capsys.readouterr().err
    assert "crf.pt" in err and "checksum" in err
    assert not (tmp_path / "out").exists()


def test_cli_train_with_early_stopping_needs_two_labelled_pairs(
    tmp_path: Path, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = write_wiki_tsv(tmp_path / "gold.tsv", [weak_overlap_pair(0)])
    status = main(["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(tmp_path / "m"), "--config", str(config_file)])
    assert status == 2
    assert "needs at least 2 labelled document pairs" in capsys.readouterr().err


def test_cli_train_defaults_to_the_learned_scorer_and_base_fine_tunes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    pairs = [weak_overlap_pair(i) for i in range(4)]
    gold = write_wiki_tsv(tmp_path / "gold.tsv", pairs)
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(first), "--epochs", "3"]) == 0
    config = json.loads((first / "config.json").read_text())
    assert config["measure"] == "learned" and "embedding_cosine" not in config["scorer"]["features"]
    assert (
        main(["train", "--gold", str(gold), "--format", "wiki-manual", "--output", str(second), "--base", str(first), "--epochs", "1"]) == 0
    )
    tuned = json.loads((second / "config.json").read_text())["scorer"]
    assert tuned["mean"] == config["scorer"]["mean"]  # fine-tuned from the base's standardisation, not refitted
    assert "fitting the pair scorer" in capsys.readouterr().err
