"""What two encoder processes on this machine's cores give together against one: the ceiling of a job's scale-out.

    .venv/bin/python bench/encoder_processes.py [--sentences 4000] [--processes 2] [--rounds 2]

The embedding job's speed-up with two one-thread worker processes (issue 34 §3, ``bench/corpus_scale.py --workers
2 --threads 1``) cannot beat what two bare encoders reach on the same cores. This bench loads the app's encoder
(ENCODER_MODEL's default, the ``auto`` backend, one thread: as each worker does) in ``--processes`` processes, lets
each encode the same sentences of the corpus bench's text (OneStopEnglish when ``../shared/data`` has it, else the
demo corpus; split as the import splits) at the same moment, and prints sentences/s of one process alone, of all
of them together, and the ratio: the scale-out the hardware allows for encoding, with no database in the way.
Rounds alternate alone / together; each figure is the best round.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

MODEL = "all-MiniLM-L6-v2"  # the default ENCODER_MODEL (webapp/settings.py)


def corpus_sentences(limit: int) -> list[str]:
    from alignment.importing.segment import split_sentences
    from bench.corpus_scale import source_articles

    sentences = []
    for complex_paragraphs, simple_paragraphs in source_articles("auto"):
        for paragraph in complex_paragraphs + simple_paragraphs:
            sentences += [paragraph[start:end] for start, end in split_sentences(paragraph, language="en")]
            if len(sentences) >= limit:
                return sentences[:limit]
    return (sentences * (limit // max(len(sentences), 1) + 1))[:limit]


def _encode_when_told(cache_dir: str, sentences: list[str], start, results) -> None:
    from models_ml.similarity.encoders import ENCODE_BATCH_SIZE, load_sentence_encoder

    encoder = load_sentence_encoder(MODEL, device="cpu", backend="auto", cache_dir=cache_dir, threads=1)
    encoder.encode(sentences[:64], batch_size=ENCODE_BATCH_SIZE)  # warm
    while True:
        if start.wait() is None:
            return
        started = time.perf_counter()
        encoder.encode(sentences, batch_size=ENCODE_BATCH_SIZE)
        results.put(time.perf_counter() - started)


class Encoders:
    """``count`` encoder processes, loaded once; :meth:`run` has ``active`` of them encode at once, returns sentences/s."""

    def __init__(self, count: int, cache_dir: str, sentences: list[str]) -> None:
        context = multiprocessing.get_context("spawn")
        self.sentences = sentences
        self.queues = [context.SimpleQueue() for _ in range(count)]
        self.results = context.SimpleQueue()
        self.processes = [
            context.Process(target=_encode_when_told, args=(cache_dir, sentences, _Gate(q), self.results)) for q in self.queues
        ]
        for process in self.processes:
            process.start()

    def run(self, active: int) -> float:
        for queue in self.queues[:active]:
            queue.put(True)
        seconds = [self.results.get() for _ in range(active)]
        return active * len(self.sentences) / max(seconds)  # together: all of them done

    def close(self) -> None:
        for queue in self.queues:
            queue.put(None)
        for process in self.processes:
            process.join()


class _Gate:
    """A start signal per process: ``wait`` blocks until told to run (True) or to stop (None)."""

    def __init__(self, queue) -> None:
        self.queue = queue

    def wait(self):
        return self.queue.get()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=4000, help="sentences each process encodes per round")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.sentences < 64 or args.processes < 2 or args.rounds < 1:
        sys.exit("need --sentences >= 64, --processes >= 2 and --rounds >= 1")
    sentences = corpus_sentences(args.sentences)
    with tempfile.TemporaryDirectory(prefix="encoder-processes-") as cache_dir:
        from models_ml.similarity.encoders import load_sentence_encoder

        load_sentence_encoder(MODEL, device="cpu", backend="auto", cache_dir=cache_dir, threads=1)  # the export, once
        encoders = Encoders(args.processes, cache_dir, sentences)
        try:
            alone, together = [], []
            for _ in range(args.rounds):
                alone.append(encoders.run(1))
                together.append(encoders.run(args.processes))
        finally:
            encoders.close()
    print(f"{len(sentences):,} sentences per process, {MODEL} (auto backend), 1 thread each, best of {args.rounds} rounds")
    print(f"one process alone     {max(alone):8.1f} sentences/s   (rounds: {', '.join(f'{r:.1f}' for r in alone)})")
    print(f"{args.processes} processes at once   {max(together):8.1f} sentences/s   (rounds: {', '.join(f'{r:.1f}' for r in together)})")
    print(f"scale-out             {max(together) / max(alone):8.2f}x  (the ceiling of the embedding job's on these cores)")


if __name__ == "__main__":
    main()
