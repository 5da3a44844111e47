"""The rows a huge pair's alignment keeps between its blocks (registered with the app by alignment/models.py)."""

from __future__ import annotations

from django.db import models

from alignment.models import AlignmentRun, DocumentPair


class PairBlock(models.Model):
    """One block of a huge pair aligned block by block (:mod:`models_ml.aligning.blockwise`), planned and then done.

    A run plans a huge pair once (all its blocks, not done) and then aligns block after block, each
    committed with its candidates, so a run that gives its worker back, is cancelled or whose worker
    dies continues at the first block not done, without planning again. ``rows`` is the simple
    sentences [start, end); ``cols`` the complex sentence ranges; ``viterbi`` the rows' chosen complex
    sentences (document indices); ``groups`` how many predicted groups the block added (group numbers
    of later blocks follow). The pair's :class:`AlignedPair` is written when the last block is done.
    """

    run = models.ForeignKey(AlignmentRun, on_delete=models.CASCADE, related_name="pair_blocks")
    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="pair_blocks")
    index = models.PositiveIntegerField()
    rows = models.JSONField()
    cols = models.JSONField()
    done = models.BooleanField(default=False)
    viterbi = models.JSONField(default=list)
    groups = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)

    class Meta:
        ordering = ["run", "pair", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "pair", "index"], name="pair_block_unique")]

    def __str__(self) -> str:
        return f"block {self.index} of {self.pair} in run {self.run_id}"
