"""A run's shards, and the rows a huge pair's alignment keeps between its blocks (registered with the app by
alignment/models.py)."""

from __future__ import annotations

from django.db import models

from alignment.jobs.models import Job
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


class AlignmentShard(Job):
    """A share of a large run's pairs, aligned by its own task, so that several workers work on one run.

    A run of more than ``ALIGN_SHARD_PAIRS`` pairs splits its pending pairs into shards of that many
    (alignment/aligning/shards.py); each shard is a job of the queue "alignment" with its own attempts,
    heartbeat and time slices, and the run succeeds when its last shard does. A shard stores each pair
    as an unsharded run does, under the run's row lock, so the run's counters add up across shards.
    """

    kind = "alignment shard"
    resumable = True  # a requeued shard skips the pairs the run already stored
    spreads = True  # its user's spare lanes too (alignment/jobs/enqueue.py)

    run = models.ForeignKey(AlignmentRun, on_delete=models.CASCADE, related_name="shards")
    index = models.PositiveIntegerField()
    pair_ids = models.JSONField(default=list, help_text="The document pairs of this shard (ids), fixed when the run split.")

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="alignment_shard_unique")]

    def __str__(self) -> str:
        return f"shard {self.index} of alignment run {self.run_id}: {self.status}"

    @property
    def lane_user_id(self) -> int | None:
        """The run's owner: a run's shards share their owner's lanes, so one big run cannot take every worker."""
        return AlignmentRun.objects.filter(pk=self.run_id).values_list("created_by_id", flat=True).first()
