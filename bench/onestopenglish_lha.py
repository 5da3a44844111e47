"""LHA document alignment on OneStopEnglish: adv texts vs ele texts, pairing hidden.

    .venv/bin/python bench/onestopenglish_lha.py [--limit N] [--encode-batch-size 32] [--threads 0] [--retrieval hybrid]

Needs ../shared/data/onestopenglish. The 189 advanced texts form the source corpus and the 189
elementary texts the target corpus; the article name (the true pairing) is used only to score.
Files are read and split into sentences as the app imports them (``alignment.importing``
readers and pysbd; no database). Sentences are encoded once with the bundled MiniLM on CPU.

Printed, as in seed 000 Table 1 (K = 1): F1_max over theta_d (a source's nearest target is
predicted when its cosine >= theta_d; precision over predictions, recall over the 189 true
pairs), the % of true pairs found at F1_max, the % found at K = 1 with no threshold, and the
speed: documents/s and sentences/s for encoding + document vectors + search, and for the
search alone. Then one full ``mine_lha`` pass (default LHAConfig, vectors reused) for the
sentence step's speed. The paper's set-up differs (46 true Wikipedia/Simple Wikipedia pairs
among 1046 x 1046 documents, Sent2Vec on one CPU thread); its figures are for orientation.

``--retrieval hybrid`` adds the hybrid document step (``models_ml.mining.hybrid_lha``: w x the MiniLM document
cosine + (1 - w) x the character 3-gram TF-IDF cosine of the whole documents, one IDF fitted on both levels'
documents) for w = 0.1, 0.3, 0.5: true pairs at K = 1, F1_max and the fused scores of right and wrong nearest
documents; the ``mine_lha`` pass is then left out.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np

from alignment.importing.readers import ImportOptions, read_file
from alignment.importing.segment import layout_from_paragraphs
from models_ml.mining.hybrid_lha import document_text, document_vectoriser, hybrid_document_neighbours
from models_ml.mining.lha import LHAConfig, align_documents, document_vectors, mine_lha
from models_ml.mining.types import MiningDocument
from models_ml.similarity.encoders import load_sentence_encoder

ONESTOP = REPO_ROOT.parent / "shared" / "data" / "onestopenglish"
# seed 000, Table 1 (document alignment): approach -> (F1_max, TP %, theta_d, doc/s)
PAPER_TABLE1 = {
    "Average word embeddings": (0.66, 43, 0.69, 260),
    "Sent2Vec": (0.78, 61, 0.62, 343),
    "Overlap": (0.53, 29, 0.66, 120),
    "BM25": (0.46, 16, 0.257, 60),
    "RWMD": (0.713, 51, 0.67, 60),
    "WMD": (0.49, 24, 0.3, 1.5),
}


def read_level(level: str, limit: int) -> list[MiningDocument]:
    """One MiningDocument per ``LEVEL/NAME-LEVEL.txt`` (doc_id = NAME), read and split as the app imports it."""
    options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
    documents = []
    for path in sorted((ONESTOP / level).glob("*.txt"))[: limit or None]:
        for parsed in read_file(path.name, path.read_bytes(), options):
            layout = layout_from_paragraphs(parsed.paragraphs or [], language="en")
            sentences = [sentence.text for paragraph in layout.paragraphs for sentence in paragraph.sentences]
            documents.append(MiningDocument(parsed.external_id, sentences))
    return documents


def f1_max(correct: np.ndarray, scores: np.ndarray, gold: int) -> tuple[float, float, float]:
    """(F1_max, recall at F1_max, theta_d) over thresholds at every distinct score; correct / scores are (S,)."""
    order = np.argsort(-scores, kind="stable")  # (S,) best first
    true_positives = np.cumsum(correct[order])  # (S,) predictions at theta = scores[order][i]
    predicted = np.arange(1, len(order) + 1)
    precision, recall = true_positives / predicted, true_positives / gold
    f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0.0)
    last_of_tie = np.r_[scores[order][1:] != scores[order][:-1], True]  # a threshold keeps all equal scores
    f1 = np.where(last_of_tie, f1, -1.0)
    best = int(np.argmax(f1))
    return float(f1[best]), float(recall[best]), float(scores[order][best])


def hybrid_documents(source, target, source_docs: np.ndarray, target_docs: np.ndarray, gold: int) -> None:
    """The hybrid document step at K = 1 (and K = 5) for each dense weight, printed as the dense lines above."""
    vectoriser = document_vectoriser([d.sentences for d in source] + [d.sentences for d in target])
    source_lexical = vectoriser.transform([document_text(d.sentences) for d in source])  # (S, D)
    target_lexical = vectoriser.transform([document_text(d.sentences) for d in target])  # (T, D)
    for weight in (0.1, 0.3, 0.5):
        views = (source_docs, target_docs, source_lexical, target_lexical)
        nearest = hybrid_document_neighbours(*views, k=1, theta_d=-1.0, dense_weight=weight)
        correct = np.array([source[s].doc_id == target[t].doc_id for s, t, _ in nearest], dtype=np.int64)  # (S,)
        scores = np.array([score for _, _, score in nearest], dtype=np.float64)  # (S,)
        best_f1, best_recall, best_theta = f1_max(correct, scores, gold)
        wrong = scores[correct == 0]
        found_k5 = hybrid_document_neighbours(*views, k=5, theta_d=-1.0, dense_weight=weight)
        print(
            f"hybrid w={weight}: K=1 {correct.sum()} of {gold} true pairs; F1_max {best_f1:.3f} at theta_d {best_theta:.3f} "
            f"({100 * best_recall:.1f}% found); fused score of the nearest: right {scores[correct == 1].min():.3f}-"
            f"{scores[correct == 1].max():.3f}"
            + (f", wrong {wrong.min():.3f}-{wrong.max():.3f}" if len(wrong) else ", no wrong pair")
            + f"; K=5: {sum(source[s].doc_id == target[t].doc_id for s, t, _ in found_k5)} true pairs among {len(found_k5)}"
        )


def main() -> None:
    """Long because it is one measurement script read top to bottom: each step prints its figures as it goes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="only the first N articles of each level (0: all)")
    parser.add_argument("--encode-batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--retrieval", choices=["dense", "hybrid"], default="dense", help="hybrid: add the hybrid document step")
    args = parser.parse_args()
    if not ONESTOP.exists():
        sys.exit(f"{ONESTOP} is missing: this benchmark needs ../shared/data/onestopenglish beside the checkout.")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    source, target = read_level("adv", args.limit), read_level("ele", args.limit)
    documents = len(source) + len(target)
    sentences = sum(len(d.sentences) for d in source) + sum(len(d.sentences) for d in target)
    print(
        f"OneStopEnglish: {len(source)} adv + {len(target)} ele documents, {sentences} sentences; torch threads {torch.get_num_threads()}"
    )

    encoder = load_sentence_encoder(device="cpu")
    encoder.encode(["Warm-up sentence."] * 8, batch_size=8)
    started = time.perf_counter()
    source_sentences = [encoder.encode(d.sentences, batch_size=args.encode_batch_size) for d in source]  # (m_i, 384)
    target_sentences = [encoder.encode(d.sentences, batch_size=args.encode_batch_size) for d in target]
    encode_seconds = time.perf_counter() - started
    started = time.perf_counter()
    source_docs, target_docs = document_vectors(source_sentences), document_vectors(target_sentences)  # (S, d), (T, d)
    nearest = align_documents(source_docs, target_docs, k=1, theta_d=-1.0)  # K = 1, no threshold
    search_seconds = time.perf_counter() - started
    total = encode_seconds + search_seconds
    print(
        f"encoding {encode_seconds:.1f} s ({sentences / encode_seconds:.0f} sentences/s); document vectors + "
        f"exact K=1 search {search_seconds * 1000:.1f} ms"
    )
    print(f"document alignment, encoding + search: {documents / total:.1f} docs/s, {sentences / total:.0f} sentences/s")
    print(
        f"document alignment, search alone (vectors given): {documents / search_seconds:,.0f} docs/s, "
        f"{sentences / search_seconds:,.0f} sentences/s"
    )

    gold = {d.doc_id for d in source} & {d.doc_id for d in target}
    correct = np.array([source[s].doc_id == target[t].doc_id for s, t, _ in nearest], dtype=np.int64)  # (S,)
    scores = np.array([score for _, _, score in nearest], dtype=np.float64)  # (S,)
    best_f1, best_recall, best_theta = f1_max(correct, scores, len(gold))
    print(f"K=1 without threshold: {correct.sum()} of {len(gold)} true pairs = {100 * correct.sum() / len(gold):.1f}%")
    print(f"F1_max {best_f1:.3f} at theta_d {best_theta:.3f}, true pairs found at F1_max {100 * best_recall:.1f}%")
    wrong = scores[correct == 0]
    print(
        f"cosine of the nearest document: right {scores[correct == 1].min():.3f}-{scores[correct == 1].max():.3f}"
        + (f", wrong {wrong.min():.3f}-{wrong.max():.3f}" if len(wrong) else ", no wrong pair")
    )
    found_k5 = align_documents(source_docs, target_docs, k=5, theta_d=-1.0)
    print(
        f"K=5 without threshold: {sum(source[s].doc_id == target[t].doc_id for s, t, _ in found_k5)} true pairs "
        f"among {len(found_k5)} candidates"
    )

    if args.retrieval == "hybrid":
        hybrid_documents(source, target, source_docs, target_docs, len(gold))
        return
    vectors = {}
    for document, array in zip(source + target, source_sentences + target_sentences, strict=True):
        vectors.update(zip(document.sentences, array, strict=True))

    def reuse(batch: list[str]) -> np.ndarray:
        return np.stack([vectors[s] for s in batch])  # (n, 384), encoded above

    started = time.perf_counter()
    mined = list(mine_lha(source, target, encode=reuse, config=LHAConfig()))
    mine_seconds = time.perf_counter() - started
    pairs = {(m.source_doc, m.target_doc) for m in mined}
    print(
        f"mine_lha, default LHAConfig (K_d=5, theta_d=0.5, K_s=5, theta_s=0.75, filters on), vectors reused: "
        f"{len(mined)} groups from {len(pairs)} document pairs ({sum(s == t for s, t in pairs)} true) in "
        f"{mine_seconds:.1f} s = {sentences / mine_seconds:,.0f} sentences/s; "
        f"{100 * sum(m.source_doc == m.target_doc for m in mined) / max(len(mined), 1):.1f}% of groups in true pairs"
    )
    print("seed 000 Table 1, document alignment (46 true pairs among 1046 x 1046, one CPU thread), for orientation:")
    for name, (f1, tp, theta, rate) in PAPER_TABLE1.items():
        print(f"  {name:<24} F1_max {f1:.3f}  TP {tp}%  theta_d {theta}  {rate} doc/s")


if __name__ == "__main__":
    main()
